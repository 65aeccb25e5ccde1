package admit

import (
	"testing"

	"go.uber.org/goleak"
)

// Deciding starts no goroutine, and settling none either: every test's
// stores are closed by the time it ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

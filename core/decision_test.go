package core

import (
	"testing"
	"unsafe"
)

// The flags sit side by side, before the first figure: padding after each
// would cost every copy of a decision a word (see Decision).
func TestDecisionFlagsPacked(t *testing.T) {
	var d Decision
	if end, first := unsafe.Offsetof(d.Degraded)+1, unsafe.Offsetof(d.Limit); end > first || first-unsafe.Offsetof(d.Allowed) > 8 {
		t.Errorf("flags end at %d, the first figure starts at %d: the flags are not packed into one word", end, first)
	}
}

package rulefile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/adapters/admit/rulefile"
)

// Whatever the bytes, Load and Compile return rules or an *Error, never
// panic.
func FuzzLoad(f *testing.F) {
	f.Add(common)
	f.Add(`{"policies": {"a": {"quota": 1, "period": "1s"}}, "rules": [{"policy": "a", "key": {"join": ["route", {"header": "X"}]}}]}`)
	f.Add(`[[[[{}]]]]`)
	f.Fuzz(func(t *testing.T, src string) {
		file, err := rulefile.Load("f.json", strings.NewReader(src))
		if err != nil {
			var fe *rulefile.Error
			if !errors.As(err, &fe) {
				t.Fatalf("%T: %v", err, err)
			}
			return
		}
		_, _ = rulefile.Compile(file, rulefile.Env{Store: newStore(), Hooks: hooks()})
	})
}

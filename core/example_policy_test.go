package core_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
)

// A bad policy is an error at construction that names the field at fault.
func ExampleNewPolicy() {
	_, err := core.NewPolicy(core.PolicyConfig{Name: "api", Algorithm: core.FixedWindow, Quota: 100, Period: time.Minute, Burst: 10})
	var perr *core.PolicyError
	fmt.Println(errors.As(err, &perr), err)

	p, err := core.NewPolicy(core.PolicyConfig{Name: "api", Algorithm: core.GCRA, Quota: 100, Period: time.Minute, Burst: 10})
	fmt.Println(p.Name(), p.Burst(), p.Window(), err)
	// Output:
	// true sluice: policy "api": Burst does not apply to fixed-window (its burst is Quota); leave it zero
	// api 10 6s <nil>
}

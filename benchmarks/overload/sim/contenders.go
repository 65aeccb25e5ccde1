package sim

import (
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Contender is one way to limit the backend: New builds its limiter on the
// simulation's clock, nil for no limiter at all.
type Contender struct {
	Name string
	New  func(core.Clock) (*backpressure.Limiter, error)
}

// Contenders returns the four contenders for cfg: no limiter, a static
// limit at the true C, AIMD and Gradient. The adaptive ones are not told C,
// nor the service time: they get their defaults.
func Contenders(cfg Config) []Contender {
	return []Contender{
		{Name: "none"},
		{Name: "static", New: func(c core.Clock) (*backpressure.Limiter, error) {
			return backpressure.New(backpressure.Config{Controller: backpressure.Static(cfg.Workers), Clock: c})
		}},
		{Name: "aimd", New: func(c core.Clock) (*backpressure.Limiter, error) {
			a, err := backpressure.NewAIMD(backpressure.AIMDConfig{})
			if err != nil {
				return nil, err
			}
			return backpressure.New(backpressure.Config{Controller: a, Clock: c})
		}},
		{Name: "gradient", New: func(c core.Clock) (*backpressure.Limiter, error) {
			g, err := backpressure.NewGradient(backpressure.GradientConfig{})
			if err != nil {
				return nil, err
			}
			return backpressure.New(backpressure.Config{Controller: g, Clock: c})
		}},
	}
}

// OldAIMD is the AIMD contender as the simulation ran it before issue 19:
// told a latency past which the service counts as unhealthy, 3×S, a
// constant its user must retune whenever normal latency changes.
func OldAIMD(cfg Config) Contender {
	return Contender{Name: "aimd 3×S", New: func(c core.Clock) (*backpressure.Limiter, error) {
		a, err := backpressure.NewAIMD(backpressure.AIMDConfig{})
		if err != nil {
			return nil, err
		}
		return backpressure.New(backpressure.Config{Controller: a, MaxLatency: 3 * cfg.Service, Clock: c})
	}}
}

// StaticHalf is a static limit tuned for the halved capacity of
// CapacityChange: right while the capacity is halved, half the capacity
// wasted once it is restored.
func StaticHalf(cfg Config) Contender {
	return Contender{Name: "static C/2", New: func(c core.Clock) (*backpressure.Limiter, error) {
		return backpressure.New(backpressure.Config{Controller: backpressure.Static(cfg.Workers / 2), Clock: c})
	}}
}

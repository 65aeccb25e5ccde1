package backpressure

import "github.com/sluice-go/sluice/core"

// numClasses is the number of core.Class values.
const numClasses = 3

// rank orders classes by how much they matter: 0 for Sheddable, 2 for
// Critical. Queues are indexed by rank.
func rank(c core.Class) int {
	switch c {
	case core.Critical:
		return 2
	case core.Default:
		return 1
	}
	return 0
}

// Headroom holds back fractions of a Limiter's limit from the lower
// classes, so that under pressure the lowest class is shed first and
// critical traffic still finds room. With a limit L, Critical requests may
// fill all L slots, Default requests L - floor(Critical×L), and Sheddable
// requests a further floor(Default×L) fewer. The zero Headroom treats
// every class alike (but for the order in which waiting requests are
// admitted).
type Headroom struct {
	// Critical is the fraction of the limit only Critical requests may use.
	Critical float64
	// Default is the fraction of the limit, beyond Critical's, that
	// Sheddable requests may not use.
	Default float64
}

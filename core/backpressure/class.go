package backpressure

import "fmt"

// Class is how much a request matters when the service is saturated. The
// zero value is Default, so requests that nobody classified are Default.
type Class uint8

// Classes, from the one shed last to the one shed first.
const (
	// Default is the class of ordinary traffic.
	Default Class = iota
	// Critical traffic is admitted first, may use the shares of the limit
	// that Config.Reserve keeps, and is shed last: health checks, payments,
	// requests a user is waiting on.
	Critical
	// Sheddable traffic is shed first: prefetches, batch jobs, retries that
	// can wait.
	Sheddable

	numClasses = 3
)

var classNames = [numClasses]string{"default", "critical", "sheddable"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// rank orders classes by how much they matter: 0 for Sheddable, 2 for
// Critical. Queues are indexed by rank.
func (c Class) rank() int {
	switch c {
	case Critical:
		return 2
	case Default:
		return 1
	}
	return 0
}

// classOfRank is the inverse of rank.
var classOfRank = [numClasses]Class{Sheddable, Default, Critical}

// Reserve holds back shares of a Limiter's limit from the lower classes, so
// that under pressure the lowest class is shed first and critical traffic
// still finds room. With a limit L, Critical requests may fill all L slots,
// Default requests L - floor(Critical×L), and Sheddable requests a further
// floor(Default×L) fewer. The zero Reserve treats every class alike (but
// for the order in which waiting requests are admitted).
type Reserve struct {
	// Critical is the share of the limit only Critical requests may use.
	Critical float64
	// Default is the share of the limit, beyond Critical's, that Sheddable
	// requests may not use.
	Default float64
}

package core

import "context"

// Observers returns an Observer that hands every event to each of os in
// turn, so that one Limiter can feed several (metrics and logs, say): a
// Limiter takes one. Nil observers are skipped; with none left, Observers
// returns nil, which a Limiter takes as no observer at all.
func Observers(os ...Observer) Observer {
	var all []Observer
	for _, o := range os {
		if o != nil {
			all = append(all, o)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return func(ctx context.Context, e Event) {
		for _, o := range all {
			o(ctx, e)
		}
	}
}

package core

import "context"

// TakeShadow decides rs as TakeAll does, taking the same units, for limits
// whose caller does not enforce them (a rule in shadow, or a share of its
// keys): the observer sees the decision with Event.Shadow set, so that a
// shadow denial is never counted as a real one.
func (l *Limiter) TakeShadow(ctx context.Context, rs []Request, ds []Decision) (Decision, error) {
	d, _, err := l.takeAllWith(ctx, rs, ds, nil, nil, true)
	return d, err
}

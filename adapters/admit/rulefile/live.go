package rulefile

import (
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/adapters/admit"
)

// Live keeps the rules of the engines built from a Rules' Config (an
// adapter's middleware) in step with the versions of a rule file: Apply
// swaps a new version in while requests flow (admit.Swapper.Swap),
// keeping the state of every policy whose definition is unchanged. A
// source calls Apply: package rulewatch on a file's changes, package
// redisrules on a version a fleet publishes. It is safe for concurrent use.
type Live struct {
	swap *admit.Swapper
	env  Env
	mu   sync.Mutex
	cur  atomic.Pointer[Rules]
}

// NewLive returns a Live for the engines built from rules.Config(), with
// env, the Env rules was compiled with.
func NewLive(rules *Rules, env Env) *Live {
	l := &Live{swap: rules.cfg.Swapper, env: env}
	l.cur.Store(rules)
	return l
}

// Apply swaps f in, unless its Version is the one in force. On an error
// (a bad file, a change Swap cannot make) the rules in force stay.
func (l *Live) Apply(f *File) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur.Load()
	if cur.file.Version() == f.Version() {
		return nil
	}
	next, err := cur.Next(f, l.env)
	if err != nil {
		return err
	}
	if err := l.swap.Swap(next.cfg.Rules); err != nil {
		return locate(&decoder{name: f.name}, f, err)
	}
	l.cur.Store(next)
	return nil
}

// Rules returns the rules in force.
func (l *Live) Rules() *Rules { return l.cur.Load() }

// Version returns the version in force (File.Version).
func (l *Live) Version() string { return l.cur.Load().file.Version() }

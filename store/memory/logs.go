package memory

import (
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// logTable holds the sliding logs of one policy in one shard, in two
// generations like stateTable, all under the shard lock: a log is a large
// value that a request changes in many places, so the lock-free hot path of
// the small states does not apply. A log is changed through its pointer, so
// taking from a key writes nothing the map's other lookups read.
type logTable struct {
	policy     *core.Policy
	young, old map[uint64]*storekit.Log
}

// get returns h's log, moving it to the young generation if it was in the
// old one; nil if the table, of shard i of s, does not hold h.
func (t *logTable) get(h uint64, s *Store, i int) *storekit.Log {
	if l := t.young[h]; l != nil {
		return l
	}
	l := t.old[h]
	if l != nil {
		delete(t.old, h)
		t.insert(h, l, s, i)
	}
	return l
}

// find is get without moving anything.
func (t *logTable) find(h uint64) *storekit.Log {
	if l := t.young[h]; l != nil {
		return l
	}
	return t.old[h]
}

// insert adds h, which the table, of shard i of s, does not hold, to the
// young generation.
func (t *logTable) insert(h uint64, l *storekit.Log, s *Store, i int) {
	s.admit(i)
	if t.young == nil {
		t.young = make(map[uint64]*storekit.Log)
	}
	t.young[h] = l
}

func (t *logTable) drop(h uint64) {
	delete(t.young, h)
	delete(t.old, h)
}

func (t *logTable) rotate() { t.old, t.young = t.young, nil }

func (t *logTable) len() int { return len(t.young) + len(t.old) }

// sweep drops the logs back to full at now.
func (t *logTable) sweep(now int64) {
	for _, g := range [...]map[uint64]*storekit.Log{t.young, t.old} {
		for h, l := range g {
			if storekit.FullLog(t.policy, l, now) {
				delete(g, h)
			}
		}
	}
}

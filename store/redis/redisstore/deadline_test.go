package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDeadlines(t *testing.T) {
	const timeout = 40 * time.Millisecond
	d := newDeadlines(timeout)
	start := time.Now()

	s := d.current(start)
	assert.Equal(t, timeout+timeout/16, s.deadline.Sub(start), "a new span: the timeout and a sixteenth")
	assert.Same(t, s, d.current(start), "calls starting together share a span")
	assert.Same(t, s, d.current(start.Add(timeout/16)), "for a sixteenth of the timeout")
	later := d.current(start.Add(timeout/16 + time.Microsecond))
	assert.NotSame(t, s, later, "then a new one")
	assert.GreaterOrEqual(t, later.deadline.Sub(start.Add(timeout/16+time.Microsecond)), timeout, "every caller waits at least the timeout")

	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the span never ended")
	}
	assert.False(t, time.Now().Before(s.deadline.Add(-time.Millisecond)), "a span never ends before its deadline")
}

package redisstore

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuickRedial: a dial that gets no answer marks its server silent; the
// next dial to it tries again with a fresh attempt within its timeout,
// rather than wait the whole timeout on one (a SYN lost to a partition),
// and a dial that succeeds clears the mark.
func TestQuickRedial(t *testing.T) {
	cs := &conns{waiting: func() bool { return false }, closed: make(chan struct{})}
	var attempts, silentFor atomic.Int64
	silentFor.Store(1 << 30)
	dial := cs.dialer(func(ctx context.Context, _, _ string) (net.Conn, error) {
		if attempts.Add(1) <= silentFor.Load() {
			// No answer: the handshake never completes, and the dial
			// gives up at its context's deadline, as net.Dialer does.
			var deadline <-chan time.Time
			if d, ok := ctx.Deadline(); ok {
				deadline = time.After(time.Until(d))
			}
			select {
			case <-ctx.Done():
			case <-deadline:
			}
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}
		}
		c, s := net.Pipe()
		_ = s.Close()
		return c, nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := dial(ctx, "tcp", "10.0.0.1:6379")
	cancel()
	require.Error(t, err)
	assert.Equal(t, int64(1), attempts.Load(), "a first dial waits its whole timeout")

	// The server answers from its third attempt on.
	silentFor.Store(2)
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dial(ctx, "tcp", "10.0.0.1:6379")
	require.NoError(t, err, "tried again within the timeout")
	_ = c.Close()
	assert.Equal(t, int64(3), attempts.Load(), "a second attempt, then a third")
	_, silent := cs.silent.Load("10.0.0.1:6379")
	assert.False(t, silent, "a dial that succeeds clears the mark")

	_, err = dial(ctx, "tcp", "10.0.0.2:6379")
	require.NoError(t, err, "another server")
	assert.Equal(t, int64(4), attempts.Load())

	// A caller's own round trip runs under a context that reports its
	// deadline but never ends (inlineCtx): past the deadline the dial ends
	// too, rather than try again at once, forever.
	silentFor.Store(1 << 30)
	attempts.Store(0)
	ictx := &inlineCtx{Context: context.Background(), deadline: time.Now().Add(20 * time.Millisecond)}
	_, err = dial(ictx, "tcp", "10.0.0.1:6379")
	require.Error(t, err)
	_, err = dial(ictx, "tcp", "10.0.0.1:6379")
	require.Error(t, err, "past its deadline")
	assert.LessOrEqual(t, attempts.Load(), int64(3), "no attempt past the deadline but the one that finds it passed")
}

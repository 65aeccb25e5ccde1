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
			<-ctx.Done() // no answer: the handshake never completes
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
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
}

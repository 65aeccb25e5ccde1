package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStaleSlotMap: which errors say a Cluster's slot map may be stale.
func TestStaleSlotMap(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, c := range []struct {
		err   error
		stale bool
	}{
		{nil, false},
		{refused, true},
		{fmt.Errorf("take: %w", refused), true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{io.EOF, true},
		{context.DeadlineExceeded, true},
		{context.Canceled, false}, // the store's own doing
		{goredis.ErrClosed, false},
		{errors.New("MOVED 3999 127.0.0.1:6381"), false}, // not a reply: go-redis types them
	} {
		assert.Equal(t, c.stale, stale(c.err), "%v", c.err)
	}
}

// TestSlotMapReloadsAreBounded: a storm of failed round trips asks for one
// reload per reloadGap at most, and go-redis runs them one at a time.
func TestSlotMapReloadsAreBounded(t *testing.T) {
	var loads atomic.Int64
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]goredis.ClusterSlot, error) {
			loads.Add(1)
			return []goredis.ClusterSlot{{Start: 0, End: 16383, Nodes: []goredis.ClusterNode{{Addr: "127.0.0.1:1"}}}}, nil
		},
	})
	t.Cleanup(func() { _ = cc.Close() })
	topo := newTopology(cc)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	start := time.Now()
	for range 100_000 {
		topo.saw(refused)
		topo.saw(nil)
	}
	elapsed := time.Since(start)
	asked := topo.asked.Load()
	assert.GreaterOrEqual(t, asked, int64(1), "a refused dial asks for a reload")
	assert.LessOrEqual(t, asked, 1+int64(elapsed/reloadGap), "at most one per %v over %v", reloadGap, elapsed)
	require.Eventually(t, func() bool { return loads.Load() >= 1 }, 10*time.Second, time.Millisecond, "the slot map reloaded")
	assert.Zero(t, newTopology(nil).asked.Load())
	newTopology(nil).saw(refused) // no cluster: nothing to reload, no panic
}

package redisstore

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proxy stands between the store and a Redis for tests of a slow or lossy
// network: it delays every reply by delay (a delay line: replies keep their
// order and their rate, each arrives delay later), and can drop replies,
// closing the connection instead of passing a reply on.
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string
	dial   dialFunc
	delay  atomic.Int64 // ns added to every reply
	drop   atomic.Int32 // replies still to drop
	// late replies still to hold back by lateBy on top of delay (PONGs
	// excepted); PONGs are held back by pongDelay instead of delay.
	late      atomic.Int32
	lateBy    atomic.Int64
	pongDelay atomic.Int64
	conns     atomic.Int64 // connections accepted
	mu        sync.Mutex
	open      []net.Conn
	wg        sync.WaitGroup
}

// startProxy starts a proxy to target, closed when the test ends.
func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return startProxyOn(t, ln, target, (&net.Dialer{}).DialContext)
}

// startProxyOn starts a proxy accepting on ln and dialing target with dial
// (a fault net's namespace's), closed when the test ends.
func startProxyOn(t testing.TB, ln net.Listener, target string, dial dialFunc) *proxy {
	t.Helper()
	p := &proxy{t: t, ln: ln, target: target, dial: dial}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *proxy) track(c net.Conn) {
	p.mu.Lock()
	p.open = append(p.open, c)
	p.mu.Unlock()
}

func (p *proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		server, err := p.dial(ctx, "tcp", p.target)
		cancel()
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		p.wg.Go(func() {
			_, _ = io.Copy(server, client)
			_ = server.Close()
		})
		p.wg.Go(func() { p.replies(server, client) })
	}
}

// chunk is a piece of a reply and when it may go on.
type chunk struct {
	data []byte
	at   time.Time
}

// replies passes server's replies on to client, each delay after it came.
func (p *proxy) replies(server, client net.Conn) {
	line := make(chan chunk, 1024)
	p.wg.Go(func() {
		defer func() { _ = client.Close() }()
		for c := range line {
			time.Sleep(time.Until(c.at))
			if _, err := client.Write(c.data); err != nil {
				return
			}
		}
	})
	defer close(line)
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if p.drop.Load() > 0 && p.drop.Add(-1) >= 0 {
				// The reply is lost: the client's connection goes, the
				// command has run.
				_ = client.Close()
				_ = server.Close()
				return
			}
			line <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(p.delayOf(buf[:n]))}
		}
		if err != nil {
			return // the writer passes on what is in the line, then closes
		}
	}
}

// delayOf is how long the reply starting data is held back.
func (p *proxy) delayOf(data []byte) time.Duration {
	if bytes.HasPrefix(data, []byte("+PONG")) {
		return time.Duration(p.pongDelay.Load())
	}
	d := time.Duration(p.delay.Load())
	if p.late.Load() > 0 && p.late.Add(-1) >= 0 {
		d += time.Duration(p.lateBy.Load())
	}
	return d
}

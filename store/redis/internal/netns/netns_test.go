package netns

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// TestNet links two namespaces, passes bytes between them, cuts the link
// (a read then hangs until its deadline: the bytes vanish, no error comes
// back) and mends it, and leaves no namespace behind.
func TestNet(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("network namespaces are not available here (%v); skipping", err)
	}
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	a, err := n.Add("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.Add("b")
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.Listen("tcp", b.IP+":7000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	// The loopback address of a is a's own: nothing listens there.
	if _, err := a.Dial(context.Background(), "tcp", "127.0.0.1:7000"); err == nil {
		t.Fatal("a's loopback reached b's listener")
	}
	c, err := a.Dial(context.Background(), "tcp", b.IP+":7000")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func() error {
		_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_, err := io.ReadFull(c, buf)
		return err
	}
	if err := echo(); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	if err := n.Cut(b); err != nil {
		t.Fatal(err)
	}
	if err := echo(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("across the cut: %v, want the deadline (the bytes vanish)", err)
	}
	if err := n.Mend(b); err != nil {
		t.Fatal(err)
	}
	// The bytes written across the cut are retransmitted, and echoed.
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("after mending: %v", err)
	}
}

package backpressure

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

func TestAdmitAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	g, err := NewGradient(GradientConfig{})
	require.NoError(t, err)
	for _, c := range []Config{
		{Controller: Static(8)},
		{Controller: g, Observer: func(context.Context, core.Event) {}},
		{Controller: Static(8), PerKey: 2},
	} {
		l, err := New(c)
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(1000, func() {
			p, err := l.Acquire(ctx, "key", core.Default)
			if err != nil {
				t.Fatal(err)
			}
			p.Done(core.Succeeded)
			p.Release()
		})
		assert.Zero(t, allocs, "%+v", c)
	}
}

func BenchmarkAcquire(b *testing.B) {
	ctx := context.Background()
	g, err := NewGradient(GradientConfig{})
	require.NoError(b, err)
	for _, bc := range []struct {
		name string
		c    Config
	}{
		{"static", Config{Controller: Static(1 << 20)}},
		{"gradient", Config{Controller: g}},
		{"per-key", Config{Controller: Static(1 << 20), PerKey: 1 << 20}},
	} {
		l, err := New(bc.c)
		require.NoError(b, err)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := l.Acquire(ctx, "key", core.Default)
					if err != nil {
						b.Fatal(err)
					}
					p.Done(core.Succeeded)
				}
			})
		})
	}
	l, err := New(Config{Controller: Static(1)})
	require.NoError(b, err)
	held, err := l.Acquire(ctx, "", core.Default)
	require.NoError(b, err)
	defer held.Release()
	b.Run("shed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Acquire(ctx, "", core.Default); err == nil {
				b.Fatal("admitted")
			}
		}
	})
}

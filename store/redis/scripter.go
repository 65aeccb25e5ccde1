package redis

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
)

// The scripts are assembled from the files in lua/: the prelude, the
// algorithms served, and the driver. Each algorithm has its own script,
// used when every layer of a call has that algorithm: it makes only that
// algorithm's functions on each call. Layered calls that mix algorithms use
// the generic script. A single Take under GCRA or a token bucket, the
// common case, has a hand-inlined script of its own (take_*.lua) that makes
// no functions at all.
var (
	//go:embed lua/*.lua
	luaFiles embed.FS

	algFiles = [...]string{
		core.TokenBucket:    "token_bucket",
		core.GCRA:           "gcra",
		core.LeakyBucket:    "leaky_bucket",
		core.FixedWindow:    "fixed_window",
		core.SlidingLog:     "sliding_log",
		core.SlidingCounter: "sliding_counter",
	}
	genericScript = newScript("step", assemble(core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingLog, core.SlidingCounter))
	algScripts    = func() (s [len(algFiles)]*script) {
		for a := core.TokenBucket; a <= core.SlidingCounter; a++ {
			s[a] = newScript("step-"+a.String(), assemble(a))
		}
		return s
	}()
	// takeScripts serve a single Take; the others fall back to algScripts.
	takeScripts = func() (s [len(algFiles)]*script) {
		s = algScripts
		s[core.GCRA] = newScript("take-gcra", readLua("take_header")+readLua("take_gcra"))
		s[core.TokenBucket] = newScript("take-token-bucket", readLua("take_header")+readLua("take_token_bucket"))
		return s
	}()
	resetScript = newScript("reset", readLua("reset"))
)

func readLua(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// assemble returns the step script serving algs.
func assemble(algs ...core.Algorithm) string {
	var b strings.Builder
	b.WriteString(readLua("prelude"))
	for _, a := range algs {
		b.WriteString(readLua(algFiles[a]))
	}
	b.WriteString(readLua("main"))
	return b.String()
}

// scriptFor returns the step script for the requests idx of rs (all if
// nil): the algorithm's own if they share one, the generic one otherwise.
func scriptFor(rs []core.Request, idx []int) *script {
	at := func(j int) core.Algorithm {
		if idx != nil {
			return rs[idx[j]].Policy.Algorithm()
		}
		return rs[j].Policy.Algorithm()
	}
	n := len(rs)
	if idx != nil {
		n = len(idx)
	}
	a := at(0)
	for j := 1; j < n; j++ {
		if at(j) != a {
			return genericScript
		}
	}
	return algScripts[a]
}

// script is a Lua script and its SHA-1, by which EVALSHA names it.
type script struct {
	name, src, sha string
}

func newScript(name, src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

// scripter is the store's whole access to Redis: run a script with keys and
// arguments and get integers back. A call's command is laid out by
// newCommand: three slots the scripter fills (EVALSHA, the script, the
// number of keys), then the keys, then the arguments, so that go-redis
// sends it as it is. runAll runs several calls in one round trip (a
// pipeline; on a Cluster, one per node, in parallel): it is how layered
// requests whose keys fall in several slots stay one round trip.
type scripter interface {
	run(ctx context.Context, s *script, cmd []any) (reply, error)
	runAll(ctx context.Context, calls []*call) error
	load(ctx context.Context, s *script) error
}

// newCommand returns a command with room for nkeys keys and nargs
// arguments after the three slots the scripter fills.
func newCommand(nkeys, nargs int) []any {
	cmd := make([]any, 3, 3+nkeys+nargs)
	cmd[2] = nkeys
	return cmd
}

// call is one script call of a runAll.
type call struct {
	script *script
	cmd    []any
	out    reply
	err    error
}

// reply is a script's reply: integers.
type reply []any

// int returns the i-th integer of r.
func (r reply) int(i int) int64 { return r[i].(int64) }

// check verifies that r holds n integers.
func (r reply) check(n int) error {
	if len(r) != n {
		return fmt.Errorf("%w: %d values, want %d", errReply, len(r), n)
	}
	for i, v := range r {
		if _, ok := v.(int64); !ok {
			return fmt.Errorf("%w: value %d is %T", errReply, i, v)
		}
	}
	return nil
}

// errReply reports a script reply the store cannot read.
var errReply = errors.New("unexpected script reply")

// clientScripter runs scripts through a go-redis client: EVALSHA, and EVAL
// when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
type clientScripter struct {
	c goredis.UniversalClient
}

var (
	evalsha any = "evalsha"
	eval    any = "eval"
)

func (c clientScripter) run(ctx context.Context, s *script, cmd []any) (reply, error) {
	cmd[0], cmd[1] = evalsha, s.sha
	res := c.c.Do(ctx, cmd...)
	if isNoScript(res.Err()) {
		again := append([]any{eval, s.src}, cmd[2:]...)
		res = c.c.Do(ctx, again...)
	}
	return toReply(res)
}

func (c clientScripter) runAll(ctx context.Context, calls []*call) error {
	cmds := make([]*goredis.Cmd, len(calls))
	_, err := c.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, cl := range calls {
			cl.cmd[0], cl.cmd[1] = evalsha, cl.script.sha
			cmds[i] = p.Do(ctx, cl.cmd...)
		}
		return nil
	})
	var again []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		_, err = c.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, i := range again {
				cl := calls[i]
				cmds[i] = p.Do(ctx, append([]any{eval, cl.script.src}, cl.cmd[2:]...)...)
			}
			return nil
		})
	}
	for i, cmd := range cmds {
		calls[i].out, calls[i].err = toReply(cmd)
	}
	return err
}

// load loads s into every server that may run it.
func (c clientScripter) load(ctx context.Context, s *script) error {
	if r, ok := c.c.(*goredis.Ring); ok {
		return r.ForEachShard(ctx, func(ctx context.Context, sh *goredis.Client) error {
			return sh.ScriptLoad(ctx, s.src).Err()
		})
	}
	return c.c.ScriptLoad(ctx, s.src).Err() // a ClusterClient loads on every master
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, goredis.ErrNoScript) || goredis.HasErrorPrefix(err, "NOSCRIPT"))
}

// toReply reads a script's reply: an array of integers, or one integer.
func toReply(cmd *goredis.Cmd) (reply, error) {
	v, err := cmd.Result()
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case []any:
		return v, nil
	case int64:
		return reply{v}, nil
	}
	return nil, fmt.Errorf("%w: %T", errReply, v)
}

// boundedScripter holds a call to its context's deadline for clients that
// ignore context deadlines on socket I/O (go-redis without
// ContextTimeoutEnabled): the call runs on its own goroutine and the caller
// stops waiting at the deadline. The abandoned call ends at the client's own
// ReadTimeout. It costs a goroutine per call, hence the recommendation to
// enable ContextTimeoutEnabled.
type boundedScripter struct {
	inner scripter
}

type result struct {
	out reply
	err error
}

func (b boundedScripter) run(ctx context.Context, s *script, cmd []any) (reply, error) {
	done := make(chan result, 1)
	go func() {
		out, err := b.inner.run(ctx, s, cmd)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b boundedScripter) runAll(ctx context.Context, calls []*call) error {
	// The calls are written by the goroutine: hand it copies, so that a
	// late answer cannot race with the caller reading the originals.
	mine := make([]*call, len(calls))
	for i, c := range calls {
		cp := *c
		mine[i] = &cp
	}
	done := make(chan error, 1)
	go func() { done <- b.inner.runAll(ctx, mine) }()
	select {
	case err := <-done:
		for i, c := range mine {
			calls[i].out, calls[i].err = c.out, c.err
		}
		return err
	case <-ctx.Done():
		for _, c := range calls {
			c.out, c.err = nil, ctx.Err()
		}
		return ctx.Err()
	}
}

func (b boundedScripter) load(ctx context.Context, s *script) error {
	done := make(chan error, 1)
	go func() { done <- b.inner.load(ctx, s) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

package redisstore

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
// no functions at all, and so has a batch of such Takes under one of them
// (takes_*.lua).
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
		core.LeakyQueue:     "leaky_queue",
	}
	genericScript = newScript("step", assemble(core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingLog, core.SlidingCounter, core.LeakyQueue))
	algScripts    = func() (s [len(algFiles)]*script) {
		for a := core.TokenBucket; a <= core.LeakyQueue; a++ {
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
	// takesScripts serve a batch of lone Takes under GCRA or a token
	// bucket; nil for the other algorithms.
	takesScripts = func() (s [len(algFiles)]*script) {
		s[core.GCRA] = newScript("takes-gcra", readLua("takes_header")+readLua("takes_gcra"))
		s[core.TokenBucket] = newScript("takes-token-bucket", readLua("takes_header")+readLua("takes_token_bucket"))
		return s
	}()
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

// script is a Lua script and its SHA-1, by which EVALSHA names it.
type script struct {
	name, src, sha string
}

func newScript(name, src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

// allScripts returns every script the store may run, for Preload.
func allScripts() []*script {
	return append([]*script{genericScript, takeScripts[core.GCRA], takeScripts[core.TokenBucket],
		takesScripts[core.GCRA], takesScripts[core.TokenBucket]}, algScripts[core.TokenBucket:]...)
}

var (
	evalsha any = "evalsha"
	eval    any = "eval"
)

// eval runs the script call cmd, laid out by command (EVALSHA, the script's
// SHA and the number of keys first), and returns its integers: EVALSHA, and
// EVAL when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
func (s *Store) eval(ctx context.Context, sc *script, cmd []any) ([]int64, error) {
	cmd[0], cmd[1] = evalsha, sc.sha
	c := goredis.NewIntSliceCmd(ctx, cmd...)
	err := s.conns.client.Process(ctx, c)
	if isNoScript(err) {
		cmd[0], cmd[1] = eval, sc.src
		c = goredis.NewIntSliceCmd(ctx, cmd...)
		err = s.conns.client.Process(ctx, c)
	}
	return c.Val(), scriptError(err)
}

// call is one script call of a pipelined round trip.
type call struct {
	script *script
	cmd    []any
	parts  []part // what it decides, on a single server's pipeline
	out    []int64
	err    error
}

// evalAll runs calls in one pipelined round trip (on a Cluster or a Ring, one
// per server, in parallel), then once more for those answered NOSCRIPT.
func (s *Store) evalAll(ctx context.Context, calls []*call) {
	cmds := make([]*goredis.IntSliceCmd, len(calls))
	run := func(which []int, code any, src func(*script) string) {
		_, _ = s.conns.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, i := range which {
				c := calls[i]
				c.cmd[0], c.cmd[1] = code, src(c.script)
				cmds[i] = goredis.NewIntSliceCmd(ctx, c.cmd...)
				_ = p.Process(ctx, noRetry{cmds[i]})
			}
			return nil
		})
	}
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	run(all, evalsha, func(sc *script) string { return sc.sha })
	var again []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		run(again, eval, func(sc *script) string { return sc.src })
	}
	for i, c := range cmds {
		calls[i].out, calls[i].err = c.Val(), scriptError(c.Err())
		s.topo.saw(c.Err())
	}
}

// noRetry is a script call go-redis must never send twice. A ClusterClient
// sends a pipeline again after a connection error, whatever MaxRetries says
// (up to MaxRedirects times), and a script whose reply was lost has run: it
// would take its units twice. Redirects (MOVED, ASK) are still followed:
// they say the script did not run.
type noRetry struct{ *goredis.IntSliceCmd }

func (noRetry) NoRetry() bool { return true }

// load loads sc into every server that may run it.
func (s *Store) load(ctx context.Context, sc *script) error {
	if r, ok := s.conns.client.(*goredis.Ring); ok {
		return r.ForEachShard(ctx, func(ctx context.Context, sh *goredis.Client) error {
			return sh.ScriptLoad(ctx, sc.src).Err()
		})
	}
	return s.conns.client.ScriptLoad(ctx, sc.src).Err() // a ClusterClient loads on every master
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, goredis.ErrNoScript) || goredis.HasErrorPrefix(err, "NOSCRIPT"))
}

// errScript reports an error reply to a script call. Its text is the
// reply's error code alone ("ERR", "OOM", "BUSY"...): the rest names script
// lines and internals, which a caller has no use for. Every value a script
// computes with is checked before it is sent, so this is Redis refusing
// (out of memory, busy, read-only), not the script failing on its input.
var errScript = errors.New("redisstore: script call refused")

// scriptError turns an error reply into errScript, and lets other errors
// (connection, deadline) through.
func scriptError(err error) error {
	var re goredis.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	code, _, _ := strings.Cut(re.Error(), " ")
	return fmt.Errorf("%w: %s", errScript, code)
}

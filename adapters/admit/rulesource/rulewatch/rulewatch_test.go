package rulewatch_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/admit/rulefile"
	"github.com/sluice-go/sluice/adapters/admit/rulesource/rulewatch"
	"github.com/sluice-go/sluice/adapters/admit/rulesource/ruleyaml"
	"github.com/sluice-go/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// writeFile replaces path's content as an editor does: a new file
// renamed over the old.
func writeFile(t *testing.T, path, src string) {
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(src), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

const v1 = "policies:\n  per-ip: {quota: 10, period: 1s}\nrules:\n  - {policy: per-ip, key: client-ip}\n"
const v2 = "policies:\n  per-ip: {quota: 20, period: 1s}\nrules:\n  - {policy: per-ip, key: client-ip}\n"
const bad = "policies:\n  per-ip: {quota: 20, period: 1s, burst: -3}\nrules:\n  - {policy: per-ip, key: client-ip}\n"

// The watcher applies each version written, and refuses a bad one with
// its line and field in the log, keeping the rules in force.
func TestWatchAppliesAndRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	writeFile(t, path, v1)
	f, err := ruleyaml.LoadFile(path)
	require.NoError(t, err)
	store, err := memory.New()
	require.NoError(t, err)
	defer store.Close()
	env := rulefile.Env{Store: store}
	rules, err := rulefile.Compile(f, env)
	require.NoError(t, err)
	_, err = admit.New(rules.Config())
	require.NoError(t, err)
	live := rulefile.NewLive(rules, env)

	var log syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- rulewatch.Watch(ctx, live, path, 10*time.Millisecond, slog.New(slog.NewTextHandler(&log, nil)))
	}()
	defer func() { cancel(); require.NoError(t, <-done) }()

	want2, err := ruleyaml.Load("rules.yaml", strings.NewReader(v2))
	require.NoError(t, err)
	// The watcher may start after the first write: write until it sees one.
	require.Eventually(t, func() bool {
		writeFile(t, path, v2)
		return live.Version() == want2.Version()
	}, 20*time.Second, 100*time.Millisecond)
	assert.Equal(t, int64(20), live.Rules().Policy("per-ip").Quota())

	writeFile(t, path, bad)
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "rule file refused") }, 20*time.Second, 10*time.Millisecond)
	assert.Contains(t, log.String(), "line=2")
	assert.Contains(t, log.String(), "field=policies.per-ip.burst")
	assert.Equal(t, want2.Version(), live.Version(), "the rules in force stay")
}

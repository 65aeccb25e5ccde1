package fields

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The renderers write what the server has always written, byte for byte.
func TestRenderers(t *testing.T) {
	assert.Equal(t, `"per-ip";r=9;t=1`, string(AppendItem(nil, "per-ip", 9, 1)))
	assert.Equal(t, `"per-ip";q=10;w=5`, string(AppendPolicy(nil, "per-ip", 10, 5)))
	assert.Equal(t, `"concurrency";q=64;qu="concurrent-requests"`, string(AppendConcurrentPolicy(nil, "concurrency", 64)))
	assert.Equal(t, `"per-ip";q=10;w=5, "concurrency";q=64;qu="concurrent-requests"`,
		string(AppendConcurrentPolicy(AppendSep(AppendPolicy(nil, "per-ip", 10, 5)), "concurrency", 64)))
	assert.Equal(t, `"a\"b\\c";r=0;t=0`, string(AppendItem(nil, `a"b\c`, 0, 0)), "escaped as an sf-string")
	assert.Equal(t, `x, `, string(AppendSep([]byte("x"))))

	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{
		{-time.Second, 0}, {0, 0}, {1, 1}, {time.Second, 1}, {time.Second + 1, 2}, {1500 * time.Millisecond, 2},
		{math.MaxInt64, math.MaxInt64/int64(time.Second) + 1}, {math.MinInt64, 0},
	} {
		assert.Equal(t, tc.want, Seconds(tc.d), "%v", tc.d)
	}
	assert.Equal(t, int64(1_800_000_000), Epoch(time.Unix(1_800_000_000, 0)))
	assert.Equal(t, int64(1_800_000_001), Epoch(time.Unix(1_800_000_000, 1)))
	assert.Equal(t, int64(-1), Epoch(time.Unix(-1, 0)))
	assert.Equal(t, int64(0), Epoch(time.Unix(-1, 1)))
}

// What the renderers write, the parsers read back: the strict ones member
// for member, the client's as the statuses the server meant, also when two
// middlewares stacked their members in one field and a concurrency quota
// follows.
func TestRoundTrip(t *testing.T) {
	policy := AppendPolicy(nil, "per-ip", 10, 5)
	policy = AppendPolicy(AppendSep(policy), "free", 2, 60)
	policy = AppendConcurrentPolicy(AppendSep(policy), "concurrency", 64)
	limit := AppendItem(nil, "per-ip", 9, Seconds(500*time.Millisecond))
	limit = AppendItem(AppendSep(limit), "free", 0, Seconds(30*time.Second))
	limit = AppendItem(AppendSep(limit), "concurrency", 63, 0)

	items, err := ParseItems([]string{string(limit)})
	require.NoError(t, err)
	assert.Equal(t, []Item{{"per-ip", 9, 1}, {"free", 0, 30}, {"concurrency", 63, 0}}, items)
	policies, err := ParsePolicies([]string{string(policy)})
	require.NoError(t, err)
	assert.Equal(t, []Policy{{Name: "per-ip", Quota: 10, Window: 5}, {Name: "free", Quota: 2, Window: 60},
		{Name: "concurrency", Quota: 64, Concurrent: true}}, policies)

	s := time.Second
	want := []Status{
		{Policy: "per-ip", Limit: 10, Remaining: 9, Reset: s, Window: 5 * s},
		{Policy: "free", Limit: 2, Remaining: 0, Reset: 30 * s, Window: 60 * s},
		{Policy: "concurrency", Limit: 64, Remaining: 63, Concurrent: true},
	}
	h := http.Header{}
	h.Set("RateLimit-Policy", string(policy))
	h.Set("RateLimit", string(limit))
	assert.Equal(t, want, Parse(h, epoch))
	// gRPC metadata: the same values under lower-case keys.
	md := map[string][]string{"ratelimit-policy": {string(policy)}, "ratelimit": {string(limit)}}
	assert.Equal(t, want, AppendLines(nil, Lines{RateLimit: md["ratelimit"], Policy: md["ratelimit-policy"]}, epoch))
}

func TestAppendLinesOlderForms(t *testing.T) {
	s := time.Second
	reset := Epoch(epoch.Add(90 * time.Second))
	l := Lines{XLimit: []string{"60"}, XRemaining: []string{"59"}, XReset: []string{itoa(reset)}}
	assert.Equal(t, []Status{{Limit: 60, Remaining: 59, Reset: 90 * s}}, AppendLines(nil, l, epoch))
	l.Limit, l.Remaining, l.Reset = []string{"10"}, []string{"3"}, []string{"4"}
	assert.Equal(t, []Status{{Limit: 10, Remaining: 3, Reset: 4 * s}}, AppendLines(nil, l, epoch), "the triple wins over X-")
	l.RateLimit = []string{"limit=100, remaining=42, reset=17"}
	assert.Equal(t, []Status{{Limit: 100, Remaining: 42, Reset: 17 * s}}, AppendLines(nil, l, epoch), "the dictionary wins")
	assert.Nil(t, AppendLines(nil, Lines{}, epoch))
	// Each form, given as Lines, reads as the same fields in a header.
	for _, h := range []http.Header{
		hdr("RateLimit", `"p";r=1;t=2`, "RateLimit-Policy", `"p";q=3;w=4`),
		hdr("RateLimit", "remaining=1, reset=2"),
		hdr("RateLimit-Limit", "3", "RateLimit-Remaining", "1", "RateLimit-Reset", "2"),
		hdr("X-RateLimit-Limit", "3", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", itoa(reset)),
	} {
		assert.Equal(t, Parse(h, epoch), AppendLines(nil, linesOf(h), epoch), "%v", h)
	}
}

func TestParseItemsAndPolicies(t *testing.T) {
	items, err := ParseItems([]string{`"a";r=1;t=2;pk=:AQ==:`, `"b\"c";t=4;r=3`})
	require.NoError(t, err)
	assert.Equal(t, []Item{{"a", 1, 2}, {`b"c`, 3, 4}}, items, "lines are one list; other parameters are ignored")
	items, err = ParseItems(nil)
	assert.NoError(t, err)
	assert.Nil(t, items)
	policies, err := ParsePolicies([]string{`"a";q=1`, `"b";q=2;w=3;qu=requests, "c";q=4;qu="concurrent-requests"`})
	require.NoError(t, err)
	assert.Equal(t, []Policy{{Name: "a", Quota: 1}, {Name: "b", Quota: 2, Window: 3}, {Name: "c", Quota: 4, Concurrent: true}}, policies)

	for v, msg := range map[string]string{
		`"a";r=1;t=1,`:            `fields: RateLimit is not an RFC 9651 List`,
		`a;r=1;t=1`:               `fields: RateLimit member 0 is not a String naming a policy`,
		`"a";r=1;t=1, (b);r=1`:    `fields: RateLimit member 1 is not a String naming a policy`,
		`"a";r=1`:                 `fields: RateLimit member "a": no t`,
		`"a";r=-1;t="1"`:          "fields: RateLimit member \"a\": r is not an Integer >= 0\nt is not an Integer >= 0",
		`"a";r=1.0;t=1`:           `fields: RateLimit member "a": r is not an Integer >= 0`,
		`"a";r;t=1`:               `fields: RateLimit member "a": r is not an Integer >= 0`,
		`"a";r=1;t=1, "b";r=1, ?`: `fields: RateLimit is not an RFC 9651 List`, // the syntax error wins
	} {
		_, err := ParseItems([]string{v})
		assert.EqualError(t, err, msg, "%q", v)
	}
	for v, msg := range map[string]string{
		`"a";w=1`:            `fields: RateLimit-Policy member "a": no q`,
		`"a";q=1;w=-1`:       `fields: RateLimit-Policy member "a": w is not an Integer >= 0`,
		`"a";q=1;qu=1`:       `fields: RateLimit-Policy member "a": qu is not a String`,
		`"a";q=1;w=1, b;q=1`: `fields: RateLimit-Policy member 1 is not a String naming a policy`,
	} {
		_, err := ParsePolicies([]string{v})
		assert.EqualError(t, err, msg, "%q", v)
	}
	_, err = ParsePolicies([]string{`"a";q=1`, ""})
	assert.EqualError(t, err, "fields: RateLimit-Policy is not an RFC 9651 List", "an empty line is an empty member")
}

// The renderers and the client's parse do not allocate: a server renders
// every response's fields, a client parses every response's.
func TestAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	for name, f := range map[string]func(){
		"AppendItem":             func() { buf = AppendItem(buf[:0], "per-ip", 999_999_999_999_999, 86400) },
		"AppendPolicy":           func() { buf = AppendPolicy(buf[:0], "per-ip", 100, 60) },
		"AppendConcurrentPolicy": func() { buf = AppendConcurrentPolicy(buf[:0], "concurrency", 64) },
		"AppendSep":              func() { buf = AppendSep(buf[:0]) },
		"escaped name":           func() { buf = AppendItem(buf[:0], `a"b\c`, 1, 1) },
	} {
		assert.Zero(t, testing.AllocsPerRun(100, f), name)
	}

	var qs [MaxItems]Status
	for name, h := range map[string]http.Header{
		"ietf": hdr("RateLimit-Policy", `"per-ip";q=100;w=60, "login";q=5;w=300, "c";q=4;qu="concurrent-requests"`,
			"RateLimit", `"per-ip";r=42;t=17, "login";r=1;t=250, "c";r=3;t=0`),
		"ietf, many items": hdr("RateLimit", strings.Repeat(`"p";r=1;t=1, `, 40)+`"p";r=1;t=1`),
		"dictionary":       hdr("RateLimit", "limit=100, remaining=42, reset=17"),
		"triple":           hdr("RateLimit-Limit", "100", "RateLimit-Remaining", "42", "RateLimit-Reset", "17"),
		"x-epoch":          hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", itoa(epoch.Unix()+60)),
		"malformed":        hdr("RateLimit", `"p";r=1;t=1,`, "RateLimit-Policy", `"p";q=`),
		"none":             hdr("Content-Type", "text/plain"),
	} {
		l := linesOf(h)
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Append(qs[:0], h, epoch) }), "Append %s", name)
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = AppendLines(qs[:0], l, epoch) }), "AppendLines %s", name)
	}
	for _, v := range []string{"120", "Sun, 06 Nov 1994 08:49:37 GMT"} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = ParseRetryAfter(v, epoch) }), "ParseRetryAfter %q", v)
	}
}

// FuzzRoundTrip holds render→parse identity: any printable ASCII name and
// any counts an RFC 9651 Integer holds, rendered by the renderers, read
// back as written by the strict parsers and by httpsfv, and as the server
// meant them by the client's parse.
func FuzzRoundTrip(f *testing.F) {
	f.Add("per-ip", "concurrency", int64(9), int64(1), int64(10), int64(5))
	f.Add(`a"b\c`, "", int64(0), int64(86401), int64(0), int64(0))
	f.Add(" ", "~", int64(999_999_999_999_999), int64(86400), int64(1), int64(31_536_001))
	f.Fuzz(func(t *testing.T, name, name2 string, r, tt, q, w int64) {
		if !printable(name) || !printable(name2) {
			t.Skip()
		}
		const maxInt = 999_999_999_999_999 // 15 digits
		r, tt, q, w = abs(r)%(maxInt+1), abs(tt)%(maxInt+1), abs(q)%(maxInt+1), abs(w)%(maxInt+1)

		limit := AppendItem(AppendSep(AppendItem(nil, name, r, tt)), name2, q, 0)
		policy := AppendConcurrentPolicy(AppendSep(AppendPolicy(nil, name, q, w)), name2, q)
		items, err := ParseItems([]string{string(limit)})
		if err != nil || len(items) != 2 || items[0] != (Item{name, r, tt}) || items[1] != (Item{name2, q, 0}) {
			t.Fatalf("%s: %+v, %v", limit, items, err)
		}
		policies, err := ParsePolicies([]string{string(policy)})
		if err != nil || len(policies) != 2 || policies[0] != (Policy{Name: name, Quota: q, Window: w}) ||
			policies[1] != (Policy{Name: name2, Quota: q, Concurrent: true}) {
			t.Fatalf("%s: %+v, %v", policy, policies, err)
		}
		for _, v := range [][]byte{limit, policy} {
			l, err := httpsfv.UnmarshalList([]string{string(v)})
			if err != nil || len(l) != 2 || l[0].(httpsfv.Item).Value != name || l[1].(httpsfv.Item).Value != name2 {
				t.Fatalf("httpsfv reads %s as %v, %v", v, l, err)
			}
		}

		// The client's parse. A reset beyond MaxReset, or a window beyond a
		// year, is not believed; a name repeated is matched to its first
		// policy.
		got := AppendLines(nil, Lines{RateLimit: []string{string(limit)}, Policy: []string{string(policy)}}, epoch)
		var window time.Duration
		if w > 0 && w <= maxWindowSeconds {
			window = time.Duration(w) * time.Second
		}
		var want []Status
		if tt <= int64(MaxReset/time.Second) {
			want = append(want, Status{Policy: name, Limit: q, Remaining: r, Reset: time.Duration(tt) * time.Second, Window: window})
		}
		if name2 == name {
			want = append(want, Status{Policy: name, Limit: q, Remaining: q, Window: window})
		} else {
			want = append(want, Status{Policy: name2, Limit: q, Remaining: q, Concurrent: true})
		}
		if len(got) != len(want) {
			t.Fatalf("%s / %s: %+v, want %+v", limit, policy, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s / %s: %+v, want %+v", limit, policy, got, want)
			}
		}
	})
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func abs(n int64) int64 {
	if n < 0 {
		return -(n + 1) // no overflow at MinInt64
	}
	return n
}

func linesOf(h http.Header) Lines {
	return Lines{
		RateLimit: h["Ratelimit"], Policy: h["Ratelimit-Policy"],
		Limit: h["Ratelimit-Limit"], Remaining: h["Ratelimit-Remaining"], Reset: h["Ratelimit-Reset"],
		XLimit: h["X-Ratelimit-Limit"], XRemaining: h["X-Ratelimit-Remaining"], XReset: h["X-Ratelimit-Reset"],
	}
}

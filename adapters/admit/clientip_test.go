package admit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// chain is what a request's trusted proxies appended to a proxy header: one
// element each, the proxy nearest the client first, and the client the
// walk must find from them alone.
type chain struct {
	header proxyHeader
	elems  []string
	client string // the ClientIP key
}

// The peer is 10.0.0.1; 10.0.0.0/8 is trusted.
var chains = []chain{
	{xForwardedFor, []string{"198.51.100.7"}, "198.51.100.7"},
	{xForwardedFor, []string{"198.51.100.7", "10.0.0.2"}, "198.51.100.7"},
	{xForwardedFor, []string{"[2001:db8:cafe::17]:4711"}, "2001:db8:cafe::/64"},
	{xForwardedFor, []string{"unknown"}, "10.0.0.1"},
	{xForwardedFor, []string{"unknown", "10.0.0.2"}, "10.0.0.2"},
	{forwarded, []string{"for=198.51.100.7;proto=https;by=10.0.0.1"}, "198.51.100.7"},
	{forwarded, []string{`for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
	{forwarded, []string{`for="198.51.100.7:_p";by="a, b"`, `For=10.0.0.2;host="x\"y"`}, "198.51.100.7"},
	{forwarded, []string{"for=_hidden"}, "10.0.0.1"},
	{forwarded, []string{"for=unknown", "for=10.0.0.2"}, "10.0.0.2"},
	{forwarded, []string{"proto=https"}, "10.0.0.1"},
	{xRealIP, []string{"198.51.100.7"}, "198.51.100.7"},
	{xRealIP, []string{"[2001:db8:cafe::17]"}, "2001:db8:cafe::/64"},
	{xRealIP, []string{"unknown"}, "10.0.0.1"},
}

// appendForms returns every way the proxies can have appended c's elements
// to the client's lines: each on the last line after ", ", or on a line of
// its own.
func (c chain) appendForms(client []string) [][]string {
	var forms [][]string
	for mask := range 1 << len(c.elems) {
		lines := append([]string(nil), client...)
		for i, e := range c.elems {
			if mask&(1<<i) != 0 {
				lines[len(lines)-1] += ", " + e
			} else {
				lines = append(lines, e)
			}
		}
		forms = append(forms, lines)
	}
	return forms
}

// roomy never runs dry.
var roomy = core.MustPolicy(core.PolicyConfig{Name: "roomy", Algorithm: core.TokenBucket, Quota: 1_000_000, Period: time.Second, Burst: 1 << 30})

// keyer decides requests behind a trusted proxy and reports their
// ClientIP keys.
type keyer struct {
	ms  [xRealIP + 1]*Engine
	key string
}

func newKeyer(t testing.TB) *keyer {
	k := &keyer{}
	l, err := core.NewLimiter(instantStore{})
	require.NoError(t, err)
	ip := ClientIP()
	record := KeyFunc(func(dst []byte, r *Request) ([]byte, error) {
		b, err := ip.AppendKey(dst, r)
		k.key = string(b[len(dst):])
		return b, err
	})
	for h := range k.ms {
		k.ms[h], err = New(Config{
			Limiter:        l,
			Rules:          []Rule{{Policy: roomy, Key: record}},
			TrustedProxies: []string{"10.0.0.0/8"},
			ProxyHeader:    [...]string{"X-Forwarded-For", "Forwarded", "X-Real-IP"}[h],
		})
		require.NoError(t, err)
	}
	return k
}

var headerNames = [...]string{xForwardedFor: "X-Forwarded-For", forwarded: "Forwarded", xRealIP: "X-Real-Ip"}

// of returns the key of a request from the trusted peer 10.0.0.1 whose
// header h has these field lines.
func (k *keyer) of(h proxyHeader, lines []string) string {
	return k.from("10.0.0.1", h, lines)
}

// from is of with another peer.
func (k *keyer) from(peer string, h proxyHeader, lines []string) string {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = peer + ":4000"
	req.Header[headerNames[h]] = lines
	k.key = ""
	decideHTTP(k.ms[h], &nopWriter{h: http.Header{}}, req, "/", nil)
	return k.key
}

// FuzzClientPrefix is the property the proxy walk exists for: whatever a
// client writes in its own field lines of the proxy header (prefix, split at
// '\n' into lines), and however its trusted proxies appended their elements
// to them, the key is the client the proxies' elements name, or the nearest
// trusted hop when they name none that can be read; never anything the
// client wrote.
//
// The walk reads the client's part only behind a trusted hop; so that the
// fuzzer explores that reading too, it also checks that the client's part
// behind a trusted proxy's element (10.0.0.2) reads as it does from that
// proxy itself.
func FuzzClientPrefix(f *testing.F) {
	for _, s := range []string{
		"", "198.51.100.99", `for=203.0.113.66;by="`, `for="1.2.3.4`, `for="x\`, `"`, `\"`, `\\"`,
		`for=1.2.3.4, for="[::1]:80"`, `for=203.0.113.66;by="a,b"` + "\n" + `for="`, ",,,", `for=_x;;for=1.2.3.4`,
		"[2001:db8::1", "1.2.3.4\n\"", `by=""""`, "10.0.0.1",
	} {
		f.Add(s)
	}
	k := newKeyer(f)
	f.Fuzz(func(t *testing.T, prefix string) {
		client := strings.Split(prefix, "\n")
		for _, c := range chains {
			for _, lines := range c.appendForms(client) {
				if got := k.of(c.header, lines); got != c.client {
					t.Fatalf("%s %q: key %q, want %q", headerNames[c.header], lines, got, c.client)
				}
			}
		}
		for h, hop := range map[proxyHeader]string{xForwardedFor: "10.0.0.2", forwarded: "for=10.0.0.2"} {
			want := k.from("10.0.0.2", h, client)
			for _, lines := range (chain{elems: []string{hop}}).appendForms(client) {
				if got := k.of(h, lines); got != want {
					t.Fatalf("%s %q: key %q, want %q", headerNames[h], lines, got, want)
				}
			}
		}
	})
}

// A valid Forwarded field is read as written, however its quoted strings
// hide commas, semicolons, quotes and backslashes.
func TestForwardedValid(t *testing.T) {
	k := newKeyer(t)
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{[]string{`for=198.51.100.1`}, "198.51.100.1"},
		{[]string{`for=203.0.113.1;by="a,for=1.2.3.4", for=198.51.100.1`}, "198.51.100.1"},
		{[]string{`for=203.0.113.1, for=198.51.100.1;by="\\"`}, "198.51.100.1"},
		{[]string{`for=203.0.113.1, by="\",for=1.2.3.4\\";for=198.51.100.1`}, "198.51.100.1"},
		{[]string{`for=198.51.100.1 ; proto=https`, `for=10.0.0.2`}, "198.51.100.1"},
		{[]string{`for=198.51.100.1,,`, ` `, `,for=10.0.0.2`}, "198.51.100.1"},
		{[]string{`for=198.51.100.1;;proto=https;`}, "198.51.100.1"},
		{[]string{`FOR="198.51.100.1:8080"`}, "198.51.100.1"},
		{[]string{`for="[2001:db8::1]:_port"`}, "2001:db8::/64"},
		{[]string{`for="[::ffff:198.51.100.1]"`}, "198.51.100.1"},
	} {
		assert.Equal(t, tc.want, k.of(forwarded, tc.lines), "%q", tc.lines)
	}
}

// Forwarded elements RFC 7239 rejects stop the walk at the hop seen last:
// here the peer.
func TestForwardedMalformed(t *testing.T) {
	k := newKeyer(t)
	for _, line := range []string{
		`for=198.51.100.1:80`,                    // ':' is not a token character
		`for=[2001:db8::1]`,                      // nor are brackets
		`for="198.51.100.1`,                      // unterminated
		`for=198.51.100.1"`,                      // a stray quote
		`for="198.51.100.1"x`,                    // text after a quoted string
		`for="198.51.100.1\"`,                    // the closing quote is escaped
		`for=\"198.51.100.1"`,                    // a quoted pair outside quotes
		`for=198.51.100.1;for=198.51.100.2`,      // for twice
		`for =198.51.100.1`,                      // space before '='
		`for= 198.51.100.1`,                      // and after it
		`for`,                                    // no value
		`=198.51.100.1`,                          // no name
		`for=198.51.100.1 proto=https`,           // no ';'
		"for=\"198.51.100.1\x01\"",               // a control character
		`for="\198.51.100.1"`,                    // an escape no address needs
		`for=198.51.100.1;by="x\\\"`,             // unterminated after escapes
		`for=unknown`,                            // obfuscated
		`for="_hidden:80"`,                       // obfuscated
		`for=198.51.100.256`,                     // not an address
		`for="[2001:db8::1"`,                     // not an address
		`for="198.51.100.1:99999999"`,            // not a port
		`for=198.51.100.1, for=203.0.113.1;by=\`, // the last element is malformed
	} {
		assert.Equal(t, "10.0.0.1", k.of(forwarded, []string{line}), "%q", line)
	}
}

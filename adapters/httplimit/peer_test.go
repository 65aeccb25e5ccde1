package httplimit

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestPeer(t *testing.T) {
	for ra, want := range map[string]string{
		"192.0.2.1:80":           "192.0.2.1",
		"192.0.2.1":              "192.0.2.1",
		"0.0.0.0:0":              "0.0.0.0",
		"255.255.255.255:65535":  "255.255.255.255",
		"10.0.0.1:":              "10.0.0.1",
		"1.2.3.4:x":              "1.2.3.4",
		"[::1]:80":               "::1",
		"[::ffff:192.0.2.1]:80":  "::ffff:192.0.2.1",
		"::ffff:192.0.2.1":       "::ffff:192.0.2.1",
		"2001:db8::1":            "2001:db8::1",
		"[fe80::1%eth0]:80":      "fe80::1%eth0",
		"192.0.2.01:80":          "invalid IP",
		"192.0.2.256:80":         "invalid IP",
		"192.0.2:80":             "invalid IP",
		"192.0.2.1.5:80":         "invalid IP",
		"192.0.2.1:80:90":        "invalid IP",
		"192.0.2.1 :80":          "invalid IP",
		"":                       "invalid IP",
		":80":                    "invalid IP",
		"@":                      "invalid IP",
		"/tmp/socket":            "invalid IP",
		"[::1]":                  "invalid IP",
		"[2001:db8::1]:80:90":    "invalid IP",
		"1.2.3.0004":             "invalid IP",
		"[192.0.2.1]:80":         "192.0.2.1",
		"192.0.2.1%eth0:80":      "invalid IP",
		"[::ffff:192.0.2.1%0]:1": "::ffff:192.0.2.1%0",
	} {
		checkPeer(t, ra)
		s := exchange{r: &http.Request{RemoteAddr: ra}}
		if got := s.Peer().String(); got != want {
			t.Errorf("Peer of %q = %s, want %s", ra, got, want)
		}
	}
}

// checkPeer checks what Request.clientText relies on: the host Peer keeps is
// a part of RemoteAddr, and an IPv4 peer's is its canonical text, which
// ClientIP would otherwise write.
func checkPeer(t *testing.T, ra string) {
	s := exchange{r: &http.Request{RemoteAddr: ra}}
	a := s.Peer()
	if !strings.Contains(ra, s.host) {
		t.Errorf("Peer of %q kept host %q, not a part of it", ra, s.host)
	}
	if a.Is4() && a.String() != s.host {
		t.Errorf("Peer of %q = %v, but kept host %q", ra, a, s.host)
	}
}

func FuzzPeer(f *testing.F) {
	for _, ra := range []string{"192.0.2.1:80", "192.0.2.1", "[::1]:80", "01.2.3.4:5", "1.2.3.4:5:6", "[1.2.3.4]:5"} {
		f.Add(ra)
	}
	f.Fuzz(checkPeer)
}

// FuzzPeer4 holds the one-pass IPv4 read to the general one: wherever it
// answers, it answers as net.SplitHostPort and netip.ParseAddr do.
func FuzzPeer4(f *testing.F) {
	for _, ra := range []string{"192.0.2.1:80", "192.0.2.1", "0.0.0.0:0", "255.255.255.255:65535", "01.2.3.4:5",
		"1.2.3.4:5:6", "1.2.3.4:[", "1.2.3.4:]", "256.1.1.1", "1.2.3", "1.2.3.4.5", "1..2.3", ".1.2.3", "1.2.3.4.", "1.2.3.4:"} {
		f.Add(ra)
	}
	f.Fuzz(func(t *testing.T, ra string) {
		a, host, ok := parsePeer4(ra)
		if !ok {
			return
		}
		h := ra
		if strings.IndexByte(h, ':') >= 0 {
			var err error
			if h, _, err = net.SplitHostPort(ra); err != nil {
				t.Fatalf("parsePeer4(%q) = %v, but SplitHostPort fails: %v", ra, a, err)
			}
		}
		want, err := netip.ParseAddr(h)
		if err != nil || want != a || h != host || !a.Is4() {
			t.Fatalf("parsePeer4(%q) = %v, %q; the general path: %v, %q, %v", ra, a, host, want, h, err)
		}
	})
}

// BenchmarkPeer reads the peer of the RemoteAddr forms net/http gives: an
// IPv4 and an IPv6 address with a port, and a Unix socket's.
func BenchmarkPeer(b *testing.B) {
	for _, ra := range []string{"198.51.100.7:52000", "[2001:db8::1]:52000", "@"} {
		b.Run(ra, func(b *testing.B) {
			s := exchange{r: &http.Request{RemoteAddr: ra}}
			b.ReportAllocs()
			for b.Loop() {
				s.Peer()
			}
		})
	}
}

package httplimit

import (
	"net/http"
	"net/netip"
	"testing"
)

// checkPeer compares the peer stdExchange reads from ra with what hostOf and
// netip.ParseAddr make of it.
func checkPeer(t *testing.T, ra string) {
	s := stdExchange{r: &http.Request{RemoteAddr: ra}}
	a := s.Peer()
	wantHost := hostOf(ra)
	wantA, _ := netip.ParseAddr(wantHost)
	if a != wantA || s.host != wantHost {
		t.Errorf("Peer of %q = %v, host %q; want %v, %q", ra, a, s.host, wantA, wantHost)
	}
}

func TestPeer(t *testing.T) {
	for _, ra := range []string{
		"192.0.2.1:80", "192.0.2.1", "0.0.0.0:0", "255.255.255.255:65535", "10.0.0.1:",
		"192.0.2.01:80", "192.0.2.256:80", "192.0.2:80", "192.0.2.1.5:80", "192.0.2.1:80:90",
		"192..2.1:80", ".192.0.2.1", "192.0.2.1.", "192.0.2.1 :80", "[::1]:80", "[::ffff:192.0.2.1]:80",
		"::ffff:192.0.2.1", "2001:db8::1", "", ":80", "1.2.3.4:x", "@", "/tmp/socket", "00.1.2.3",
		"1.2.3.0004",
	} {
		checkPeer(t, ra)
	}
	// The commonest forms take the one-pass path.
	for _, ra := range []string{"192.0.2.1:80", "192.0.2.1"} {
		if _, _, ok := parseIPv4Peer(ra); !ok {
			t.Errorf("parseIPv4Peer(%q) refused it", ra)
		}
	}
}

func FuzzPeer(f *testing.F) {
	for _, ra := range []string{"192.0.2.1:80", "192.0.2.1", "[::1]:80", "01.2.3.4:5", "1.2.3.4:5:6"} {
		f.Add(ra)
	}
	f.Fuzz(checkPeer)
}

package httplimit

import (
	"net/netip"
	"strings"
)

// clientIP resolves the client address of v: the peer, unless the peer is a
// trusted proxy, in which case the configured proxy header is believed as far
// as the trusted hops go. peer4 reports that the client is the peer exactly
// as View.Peer gave it, an IPv4 address.
func (m *Middleware) clientIP(v View) (client netip.Addr, peer4 bool) {
	raw := v.Peer()
	peer := raw.Unmap().WithZone("")
	if !peer.IsValid() || !m.isTrusted(peer) {
		return peer, raw.Is4()
	}
	switch m.proxy {
	case XRealIP:
		if a, ok := parseHop(strings.TrimSpace(v.Header("X-Real-Ip"))); ok {
			return a, false
		}
		return peer, false
	case Forwarded:
		return m.walkForwarded(v.HeaderValues("Forwarded"), peer), false
	default:
		return m.walkXFF(v.HeaderValues("X-Forwarded-For"), peer), false
	}
}

func (m *Middleware) isTrusted(a netip.Addr) bool {
	for _, p := range m.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// walkXFF walks X-Forwarded-For from the right (the last field line's last
// element first), skipping trusted hops. client is the hop seen so far, the
// peer to start with; a malformed hop stops the walk there.
func (m *Middleware) walkXFF(lines []string, client netip.Addr) netip.Addr {
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for {
			j := strings.LastIndexByte(rest, ',')
			if hop := strings.TrimSpace(rest[j+1:]); hop != "" { // list syntax allows empty elements
				a, ok := parseHop(hop)
				if !ok {
					return client
				}
				if client = a; !m.isTrusted(a) {
					return a
				}
			}
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return client
}

// walkForwarded is walkXFF for RFC 7239 Forwarded: each element's for=
// parameter is a hop. An element without one, or an obfuscated identifier
// ("unknown", "_hidden"), stops the walk like a malformed hop.
func (m *Middleware) walkForwarded(lines []string, client netip.Addr) netip.Addr {
	var buf [16]string
	for i := len(lines) - 1; i >= 0; i-- {
		elems := splitOutsideQuotes(lines[i], ',', buf[:0])
		for j := len(elems) - 1; j >= 0; j-- {
			elem := strings.TrimSpace(elems[j])
			if elem == "" {
				continue
			}
			node, ok := forParam(elem)
			if !ok || node == "unknown" || strings.HasPrefix(node, "_") {
				return client
			}
			a, ok := parseHop(node)
			if !ok {
				return client
			}
			if client = a; !m.isTrusted(a) {
				return a
			}
		}
	}
	return client
}

// forParam returns the (unquoted) value of elem's for= parameter.
func forParam(elem string) (string, bool) {
	var buf [8]string
	for _, pair := range splitOutsideQuotes(elem, ';', buf[:0]) {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "for") {
			continue
		}
		value = strings.TrimSpace(value)
		if strings.HasPrefix(value, `"`) {
			if len(value) < 2 || !strings.HasSuffix(value, `"`) || strings.ContainsRune(value, '\\') {
				return "", false // unterminated, or escapes no address needs
			}
			value = value[1 : len(value)-1]
		}
		return value, true
	}
	return "", false
}

// splitOutsideQuotes appends to dst the parts of s between separators that
// are not inside a quoted string.
func splitOutsideQuotes(s string, sep byte, dst []string) []string {
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			dst = append(dst, s[start:i])
			start = i + 1
		}
	}
	return append(dst, s[start:])
}

// parseHop reads one forwarded address: an IP address, optionally with a
// port ("192.0.2.1:8080", "[2001:db8::1]:8080") or in brackets
// ("[2001:db8::1]"). Zones are dropped and IPv4-mapped addresses unmapped.
func parseHop(s string) (netip.Addr, bool) {
	var (
		a   netip.Addr
		err error
	)
	switch {
	case s == "":
		return netip.Addr{}, false
	case s[0] == '[':
		if s[len(s)-1] == ']' {
			a, err = netip.ParseAddr(s[1 : len(s)-1])
		} else {
			var ap netip.AddrPort
			ap, err = netip.ParseAddrPort(s)
			a = ap.Addr()
		}
	case strings.Count(s, ":") == 1:
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

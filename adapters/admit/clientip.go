package admit

import (
	"net/netip"
	"net/textproto"
	"strings"
)

// clientIP resolves the client address of r: the peer, unless the peer is a
// trusted proxy, in which case the configured proxy header is believed as far
// as the trusted hops go. peer4 reports that the client is the peer exactly
// as View.Peer gave it, an IPv4 address.
//
// Proxies append to these headers: on the client's own field line (nginx's
// "$http_x_forwarded_for, $remote_addr") or on a line of their own. So the
// header is read from its end, element by element, each read from the
// bytes right of it alone: what the client wrote on the left can never
// change how a trusted proxy's element is read, and is read only if every
// element right of it names a trusted proxy.
func (e *Engine) clientIP(r *Request) (client netip.Addr, peer4 bool) {
	raw := r.view.Peer()
	peer := raw.Unmap().WithZone("")
	if !peer.IsValid() || !e.isTrusted(peer) {
		return peer, raw.Is4()
	}
	switch e.proxy {
	case xRealIP:
		return realIP(r.headerLines("X-Real-Ip"), peer), false
	case forwarded:
		return e.walkForwarded(r.headerLines("Forwarded"), peer), false
	default:
		return e.walkXFF(r.headerLines("X-Forwarded-For"), peer), false
	}
}

func (e *Engine) isTrusted(a netip.Addr) bool {
	for _, p := range e.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// realIP reads X-Real-IP, the address the last proxy saw: its last field
// line, and of that the last element, since a proxy that adds its value
// rather than replacing the client's leaves the client's first (on a line
// of its own, or combined into one line as a list). Anything else is the
// peer.
func realIP(lines []string, peer netip.Addr) netip.Addr {
	if len(lines) == 0 {
		return peer
	}
	last := lines[len(lines)-1]
	if a, ok := parseHop(textproto.TrimString(last[strings.LastIndexByte(last, ',')+1:])); ok {
		return a
	}
	return peer
}

// walkXFF walks X-Forwarded-For from the right (the last field line's last
// element first), skipping trusted hops. client is the hop seen so far, the
// peer to start with; a malformed hop stops the walk there. An address
// never holds a comma, so the last comma of a line always ends the
// client's part.
func (e *Engine) walkXFF(lines []string, client netip.Addr) netip.Addr {
	for i := len(lines) - 1; i >= 0; i-- {
		for line, more := lines[i], true; more; {
			j := strings.LastIndexByte(line, ',')
			hop := textproto.TrimString(line[j+1:])
			line, more = line[:max(j, 0)], j >= 0
			if hop == "" { // list syntax allows empty elements
				continue
			}
			if !e.step(hop, &client) {
				return client
			}
		}
	}
	return client
}

// walkForwarded is walkXFF for RFC 7239 Forwarded: each element's for=
// parameter is a hop. An element the RFC's grammar rejects (see
// forwardedFor), one without a for= parameter, or an obfuscated identifier
// ("unknown", "_hidden") stops the walk like a malformed hop.
func (e *Engine) walkForwarded(lines []string, client netip.Addr) netip.Addr {
	for i := len(lines) - 1; i >= 0; i-- {
		for line, more := lines[i], true; more; {
			var (
				elem string
				ok   bool
			)
			line, elem, more, ok = cutLastElement(line)
			if !ok {
				return client
			}
			if elem = textproto.TrimString(elem); elem == "" {
				continue
			}
			node, ok := forwardedFor(elem)
			if !ok || !e.step(node, &client) {
				return client
			}
		}
	}
	return client
}

// step reads one hop of a walk: if it is an address, it becomes the client,
// and the walk goes on past it if it is a trusted proxy.
func (e *Engine) step(hop string, client *netip.Addr) bool {
	a, ok := parseHop(hop)
	if !ok {
		return false
	}
	*client = a
	return e.isTrusted(a)
}

// cutLastElement splits a Forwarded field line at its last comma outside
// quoted strings: rest is the line before it and elem the element after it
// (the whole line, with more false, if there is none). It reads from the
// right, so that the element is found from its own bytes alone; ok is
// false if a quoted string in it never opens or closes.
//
// Read from the right, a quoted string's quote is escaped exactly when an
// odd run of backslashes precedes it, and an even run is escaped
// backslashes; an RFC 7239 line has no backslash outside quoted strings.
// Each byte is looked at once.
func cutLastElement(line string) (rest, elem string, more, ok bool) {
	quoted := false
	for i := len(line) - 1; i >= 0; i-- {
		c := line[i]
		if !quoted && c == ',' {
			return line[:i], line[i+1:], true, true
		}
		if !quoted && c != '"' {
			continue
		}
		n := 0 // the backslashes right before c
		for n < i && line[i-1-n] == '\\' {
			n++
		}
		escaped := n%2 == 1
		switch {
		case !quoted: // a closing quote
			if escaped {
				return "", "", false, false
			}
			quoted = true
		case c == '"' && !escaped: // the opening quote
			if n > 0 {
				return "", "", false, false
			}
			quoted = false
		}
		i -= n
	}
	return "", line, false, !quoted
}

// forwardedFor returns the node of a Forwarded element's for= parameter,
// unquoted, with an obfuscated port (RFC 7239 section 6.3) dropped. ok is
// false if elem names no for= node, names it twice, or is not of the
// grammar
//
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" ( token / quoted-string )
//
// with optional whitespace around ';' (which some proxies write).
func forwardedFor(elem string) (node string, ok bool) {
	for {
		if elem != "" && elem[0] != ';' {
			n := tokenLen(elem)
			if n == 0 || n == len(elem) || elem[n] != '=' {
				return "", false
			}
			name := elem[:n]
			value, after, vok := pairValue(elem[n+1:])
			if !vok {
				return "", false
			}
			if strings.EqualFold(name, "for") {
				if ok { // a parameter occurs once per element
					return "", false
				}
				node, ok = value, true
			}
			elem = textproto.TrimString(after)
		}
		if elem == "" {
			break
		}
		if elem[0] != ';' {
			return "", false
		}
		elem = textproto.TrimString(elem[1:])
	}
	if i := strings.LastIndex(node, ":_"); i >= 0 {
		node = node[:i]
	}
	return node, ok
}

// pairValue reads the token or quoted-string s starts with, returning the
// value (a quoted string's content, escapes left as they are: no address
// needs one) and the rest of s.
func pairValue(s string) (value, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		n := tokenLen(s)
		return s[:n], s[n:], n > 0
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c == '\\':
			if i++; i == len(s) || !quotable(s[i]) {
				return "", "", false
			}
		case !quotable(c):
			return "", "", false
		}
	}
	return "", "", false
}

// tokenLen returns the length of the RFC 9110 token s starts with.
func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return i
	}
	return len(s)
}

// quotable reports whether c may appear in a quoted-string, bare (unless a
// quote or backslash) or escaped: HTAB, SP, visible ASCII and obs-text.
func quotable(c byte) bool { return c == '\t' || c >= ' ' && c != 0x7f }

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

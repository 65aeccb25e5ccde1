package fields

// The bare items of RFC 9651 structured fields, for the parser in sfv.go.

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

func parseBare(s string) (sfBare, string, bool) {
	if s == "" {
		return sfBare{}, s, false
	}
	switch c := s[0]; {
	case c == '-' || isDigit(c):
		return parseNumber(s)
	case c == '"':
		return parseString(s[1:])
	case c == '*' || isAlpha(c):
		return parseToken(s)
	case c == ':':
		return parseByteSequence(s)
	case c == '?':
		if len(s) >= 2 && (s[1] == '0' || s[1] == '1') {
			return sfBare{kind: sfBoolean, num: int64(s[1] - '0')}, s[2:], true
		}
	case c == '@':
		b, rest, ok := parseNumber(s[1:])
		if ok && b.kind == sfInteger {
			b.kind = sfDate
			return b, rest, true
		}
	case c == '%':
		if len(s) >= 2 && s[1] == '"' {
			return parseDisplayString(s[2:])
		}
	}
	return sfBare{}, s, false
}

// parseToken: RFC 9651 §4.2.6; s starts with '*' or a letter.
func parseToken(s string) (sfBare, string, bool) {
	i := 1
	for i < len(s) && (isTChar(s[i]) || s[i] == ':' || s[i] == '/') {
		i++
	}
	return sfBare{kind: sfToken, raw: s[:i]}, s[i:], true
}

// parseByteSequence: RFC 9651 §4.2.7; s starts with ':'.
func parseByteSequence(s string) (sfBare, string, bool) {
	for i := 1; i < len(s); i++ {
		switch b := s[i]; {
		case b == ':':
			if !isBase64(s[1:i]) {
				return sfBare{}, s, false
			}
			return sfBare{kind: sfBytes, raw: s[1:i]}, s[i+1:], true
		case isAlpha(b) || isDigit(b) || b == '+' || b == '/' || b == '=':
		default:
			return sfBare{}, s, false
		}
	}
	return sfBare{}, s, false
}

// parseNumber: Integer (at most 15 digits) or Decimal (at most 12 integer
// and 1-3 fractional digits), RFC 9651 §4.2.4.
func parseNumber(s string) (sfBare, string, bool) {
	i, neg := 0, false
	if s == "" {
		return sfBare{}, s, false
	}
	if s[0] == '-' {
		neg, i = true, 1
	}
	if i >= len(s) || !isDigit(s[i]) {
		return sfBare{}, s, false
	}
	var n int64
	digits, dot, frac := 0, -1, 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			if dot >= 0 {
				frac++
			} else {
				digits++
				n = n*10 + int64(c-'0')
			}
		case c == '.' && dot < 0:
			if digits > 12 {
				return sfBare{}, s, false
			}
			dot = i
		default:
			goto done
		}
		if dot < 0 && digits > 15 || frac > 3 {
			return sfBare{}, s, false
		}
	}
done:
	if dot >= 0 {
		if frac == 0 {
			return sfBare{}, s, false // "1." is not a Decimal
		}
		return sfBare{kind: sfDecimal, raw: s[:i]}, s[i:], true
	}
	if neg {
		n = -n
	}
	return sfBare{kind: sfInteger, raw: s[:i], num: n}, s[i:], true
}

// isBase64 reports whether a Byte Sequence's content, already known to be
// made of base64 characters, decodes as RFC 9651 §4.2.7 says: base64
// (RFC 4648 §4) once any missing "=" padding is synthesized. Parsers SHOULD
// NOT fail when padding is missing or the pad bits are not zero, so
// neither is checked; "=" anywhere but at the end, more of it than a
// final quantum needs, or a final quantum of one character (six bits, no
// whole byte) fail. The decoding itself is the standard library's, into a
// stack buffer, in chunks short enough to convert without allocating.
func isBase64(s string) bool {
	data := strings.TrimRight(s, "=")
	if len(s)-len(data) > (4-len(data)%4)%4 {
		return false
	}
	var dst [24]byte
	for len(data) > 0 {
		n := min(len(data), 32) // 32 characters are 24 bytes
		if _, err := base64.RawStdEncoding.Decode(dst[:], []byte(data[:n])); err != nil {
			return false
		}
		data = data[n:]
	}
	return true
}

// parseString parses after the opening quote. Only \" and \\ are escapes;
// every other character must be printable ASCII.
func parseString(s string) (sfBare, string, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
			if i >= len(s) || (s[i] != '"' && s[i] != '\\') {
				return sfBare{}, s, false
			}
		case c == '"':
			return sfBare{kind: sfString, raw: s[:i]}, s[i+1:], true
		case c < 0x20 || c > 0x7e:
			return sfBare{}, s, false
		}
	}
	return sfBare{}, s, false // unterminated
}

// parseDisplayString parses after `%"`: printable ASCII with %xx (lower-case
// hex) escapes whose decoded bytes must be valid UTF-8.
func parseDisplayString(s string) (sfBare, string, bool) {
	var buf [utf8.UTFMax]byte
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			if n != 0 { // a truncated UTF-8 sequence
				return sfBare{}, s, false
			}
			return sfBare{kind: sfDisplay, raw: s[:i]}, s[i+1:], true
		case c < 0x20 || c > 0x7e:
			return sfBare{}, s, false
		case c == '%':
			if i+2 >= len(s) || !isLowerHex(s[i+1]) || !isLowerHex(s[i+2]) {
				return sfBare{}, s, false
			}
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		if n == 0 && c < utf8.RuneSelf {
			continue
		}
		buf[n] = c
		n++
		if utf8.FullRune(buf[:n]) {
			if r, size := utf8.DecodeRune(buf[:n]); r == utf8.RuneError && size <= 1 {
				return sfBare{}, s, false
			}
			n = 0
		} else if n == len(buf) {
			return sfBare{}, s, false
		}
	}
	return sfBare{}, s, false
}

// unescapeSF returns the value of an sf-string's raw content. It allocates
// only when the content has escapes.
func unescapeSF(raw string) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			i++
		}
		b = append(b, raw[i])
	}
	return string(b)
}

package fields

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// FuzzSFVDifferential checks sfv.go against github.com/dunglas/httpsfv, an
// independent RFC 9651 parser: for any field (its lines separated by "\n"
// in the input), parsed as a List and as a Dictionary, both accept or both
// reject it; where both accept, sfv.go yields the same members, in order,
// with the same keys, kinds and values, and reads the same Integer
// parameters.
//
// Where httpsfv departs from RFC 9651, the RFC wins, and the reference is
// corrected here rather than sfv.go bent to it:
//
//   - Byte Sequences without "=" padding (RFC 9651 §4.2.7: parsers SHOULD NOT
//     fail when padding is missing; httpsfv decodes with base64.StdEncoding,
//     which requires it). The reference is rerun with the padding
//     synthesized, as the RFC describes.
//
// Run it with `go test -run '^$' -fuzz=FuzzSFVDifferential ./fields`.
func FuzzSFVDifferential(f *testing.F) {
	for _, s := range []string{
		// Every type, parameters, inner lists, OWS.
		``, ` `, `a`, `"x"`, `1`, `-1`, `1.5`, `-0.001`, `?0`, `?1`, `:aGVsbG8=:`, `@1659578233`, `@-1`,
		`%"f%c3%bc%20x"`, `*tok/en:x`, `a, b`, `a,b`, "a ,\tb", `a;x;y=1;z="s"`, `a; x=1`,
		`(a b);q=1, ()`, `( a  b )`, `("x";p=1 2)`, `999999999999999`, `123456789012.123`,
		`"per-ip";r=42;t=17, "login";r=1;t=250`, `burst;q=10;w=1;qu="requests";pk=:cHsdsRa894==:`,
		`limit=100, remaining=42, reset=17`, `a=1, b, c=(1 2);x=3, a=2`, `a;x=1;x=2`, `a=?0;p`,
		// Invalid ones.
		`,`, `a,`, `,a`, `a,,b`, `a b`, `"x`, `"\x"`, `1234567890123456`, `1234567890123.1`, `1.1234`,
		`1.`, `-`, `-a`, `?2`, `:a`, `:a!:`, `@1.5`, `%"%zz"`, `%"%ff"`, `%"%C3%BC"`, `a;`, `a;X=1`,
		`(a`, `(a,b)`, `(a)b`, `"é"`, `a=`, "\x00", `[`, `a;x=(b)`, `A=1`, `a==1`, `a=1,`,
		// Byte Sequences: RFC 9651 §4.2.7 and the httpwg test suite.
		`:0:`, `:00:`, `:000:`, `:0000:`, `:aGVsbG8:`, `:aGVsbA:`, `:aGVsbA=:`, `:aGVsbG8==:`,
		`:iZ==:`, `:/+Ah:`, `:_-Ah:`, `:a=b=:`, `:=:`, `:====:`, `::`, `a;pk=:0:`, `k=:AQ:`,
		// Display Strings: the decoded bytes must be UTF-8 (RFC 9651 §4.2.10).
		`%"%ef%bf%bd"`, `%"%f0%9f%98%80"`, `%"%ed%a0%80"`, `%"%f4%90%80%80"`, `%"%c3"`, `%"%e2a%82"`, `%"%c0%af"`,
		// Leading and trailing whitespace: only SP is discarded before a
		// value (RFC 9651 §4.2), but OWS after each member.
		"\ta", " \ta", "\t", " \t", "a\t", "a \t ", "a=1\t", "\ta=1", "a,\tb", "(a\tb)", "a;\tx",
		// Several field lines are one value, joined by commas (§4.2).
		"a\nb", "a\n", "\na", "a,\nb", "\"a\nb\"", "a=1\nb=2", "a=1\n\nb=2", "(a\nb)", ":aGVs\nbG8=:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Split(s, "\n")
		for _, dict := range []bool{false, true} {
			checkSFVAgainstHTTPSFV(t, lines, dict)
		}
	})
}

// refMember is one member of a reference parse, reduced to what sfv.go
// exposes.
type refMember struct {
	key    string
	item   any // httpsfv bare item, or httpsfv.InnerList
	params *httpsfv.Params
}

func checkSFVAgainstHTTPSFV(t *testing.T, lines []string, dict bool) {
	t.Helper()
	want, refErr := refParse(lines, dict)
	got, valid := sfvMembers(lines, dict)
	s := strings.Join(lines, "\n") // for the messages
	if valid != (refErr == nil) {
		t.Fatalf("dict=%v %q: sfv.go valid=%v, httpsfv: %v", dict, s, valid, refErr)
	}
	if !valid {
		return
	}
	if len(lines) == 1 && !sfValid(lines[0], dict) {
		t.Fatalf("dict=%v %q: sfValid rejects what iteration accepts", dict, s)
	}
	if len(got) != len(want) {
		t.Fatalf("dict=%v %q: %d members, httpsfv has %d", dict, s, len(got), len(want))
	}
	for i, m := range got {
		r := want[i]
		if m.key != r.key {
			t.Fatalf("dict=%v %q member %d: key %q, httpsfv %q", dict, s, i, m.key, r.key)
		}
		if err := sameItem(m.item, r.item); err != nil {
			t.Fatalf("dict=%v %q member %d: %v", dict, s, i, err)
		}
		// Every Integer parameter httpsfv sees, sfv.go reads alike; every
		// other parameter (or an absent one) is no Integer to sfv.go.
		keys := append(r.params.Names(), "r", "t", "q", "w")
		for _, k := range keys {
			v, ok := r.params.Get(k)
			n, isInt := v.(int64)
			isInt = ok && isInt
			gotN, gotOK := m.param(k)
			if gotOK != isInt || gotOK && gotN != n {
				t.Fatalf("dict=%v %q member %d: param %q = (%d, %v), httpsfv %v (%T)", dict, s, i, k, gotN, gotOK, v, v)
			}
		}
	}
}

// sfvMembers iterates a field with sfv.go, as parse.go does. A
// Dictionary's duplicate keys are folded as RFC 9651 §4.2.2 folds them: the
// last value, at the first key's position.
func sfvMembers(lines []string, dict bool) (ms []sfMember, valid bool) {
	at := map[string]int{}
	it := newSFFieldIter(lines, dict)
	for m, ok := it.next(); ok; m, ok = it.next() {
		if i, dup := at[m.key]; dict && dup {
			ms[i] = m
			continue
		}
		at[m.key] = len(ms)
		ms = append(ms, m)
	}
	return ms, !it.bad
}

// refParse parses a field with httpsfv, synthesizing missing Byte Sequence
// padding as RFC 9651 §4.2.7 asks (see FuzzSFVDifferential).
func refParse(lines []string, dict bool) ([]refMember, error) {
	ms, err := refParseOnce(lines, dict)
	// httpsfv's error offsets are into the lines joined as it joins them.
	s := strings.Join(lines, ", ")
	for range len(s) + 1 { // each round pads one more Byte Sequence
		var b64 base64.CorruptInputError
		if err == nil || !errors.As(err, &b64) {
			return ms, err
		}
		padded, ok := padByteSequence(s, err)
		if !ok {
			return nil, err
		}
		s = padded
		ms, err = refParseOnce([]string{s}, dict)
	}
	panic("unreachable: a Byte Sequence is padded at most once")
}

func refParseOnce(lines []string, dict bool) ([]refMember, error) {
	if dict {
		d, err := httpsfv.UnmarshalDictionary(lines)
		if err != nil {
			return nil, err
		}
		var ms []refMember
		for _, k := range d.Names() {
			v, _ := d.Get(k)
			ms = append(ms, refMemberOf(k, v))
		}
		return ms, nil
	}
	l, err := httpsfv.UnmarshalList(lines)
	if err != nil {
		return nil, err
	}
	var ms []refMember
	for _, v := range l {
		ms = append(ms, refMemberOf("", v))
	}
	return ms, nil
}

func refMemberOf(key string, v httpsfv.Member) refMember {
	switch v := v.(type) {
	case httpsfv.Item:
		return refMember{key: key, item: v.Value, params: v.Params}
	case httpsfv.InnerList:
		return refMember{key: key, item: v, params: v.Params}
	}
	panic("unknown httpsfv member")
}

// padByteSequence finds the Byte Sequence httpsfv failed to decode (its
// error names the offset of the closing ':') and returns s with that
// sequence's padding synthesized, when that makes it valid base64.
func padByteSequence(s string, err error) (string, bool) {
	msg := err.Error()
	i := strings.LastIndex(msg, "character ")
	if i < 0 {
		return "", false
	}
	end, aerr := strconv.Atoi(msg[i+len("character "):])
	if aerr != nil || end <= 0 || end > len(s) || s[end] != ':' {
		return "", false
	}
	start := strings.LastIndexByte(s[:end], ':') + 1
	content := s[start:end]
	pad := strings.Repeat("=", (4-len(content)%4)%4)
	if _, derr := base64.StdEncoding.DecodeString(content + pad); derr != nil || pad == "" {
		return "", false
	}
	return s[:end] + pad + s[end:], true
}

// sameItem compares an sfv.go bare item with httpsfv's value.
func sameItem(b sfBare, v any) error {
	what, same := sameValue(b, v)
	if !same {
		return fmt.Errorf("%s: sfv.go kind %d %q, httpsfv %T %v", what, b.kind, b.raw, v, v)
	}
	return nil
}

// sameValue names the type of httpsfv's v and reports whether b holds it.
func sameValue(b sfBare, v any) (string, bool) {
	switch v := v.(type) {
	case int64:
		return "integer", b.kind == sfInteger && b.num == v
	case float64:
		f, err := strconv.ParseFloat(b.raw, 64)
		return "decimal", b.kind == sfDecimal && err == nil && (f == v || math.IsNaN(f) && math.IsNaN(v))
	case string:
		return "string", b.kind == sfString && unescapeSF(b.raw) == v
	case httpsfv.Token:
		return "token", b.kind == sfToken && b.raw == string(v)
	case []byte:
		dec, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(b.raw, "="))
		return "byte sequence", b.kind == sfBytes && err == nil && string(dec) == string(v)
	case bool:
		return "boolean", b.kind == sfBoolean && (b.num == 1) == v
	case time.Time:
		return "date", b.kind == sfDate && b.num == v.Unix()
	case httpsfv.DisplayString:
		dec, err := url.PathUnescape(b.raw)
		return "display string", b.kind == sfDisplay && err == nil && dec == string(v)
	case httpsfv.InnerList:
		return "inner list", b.kind == sfInnerList
	}
	return "unknown type", false
}

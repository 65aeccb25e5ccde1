package fields

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fuzz targets run their seed corpus under plain `go test`; run one with
// e.g. `go test -fuzz=FuzzParseRetryAfter ./fields` to explore further.

func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{
		"0", "120", " 7\t", "-1", "1.5", "99999999999999999999999",
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Sun, 01 Mar 2026 12:00:30 GMT", "Wed, 29 Feb 2028 00:00:00 GMT", "Sun, 31 Feb 2026 00:00:00 GMT",
		"Sun Nov 06 08:49:37 1994", "sunday, 06-nov-94 08:49:37 GMT", "", ",", "Sun, 06 Nov 1994 08:49:37 GMT\x00",
		"31536000", "31536001", "Fri, 31 Dec 9999 23:59:59 GMT",
		"Sunday, 01-Mar-26 12:00:30 PST", "Sunday, 01-Mar-26 12:00:30 GMT+1", "Tuesday, 29-Feb-00 00:00:00 GMT",
		"Sun, 01 Mar 2026 12:00:30.5 GMT", "Sun Mar 1 12:00:30 2026",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryAfter(s, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("%q: delay %v out of [0, a year]", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("rejected %q but returned %v", s, d)
		}
		// Optional whitespace around the value changes nothing.
		if d2, ok2 := ParseRetryAfter(" \t"+s+"\t ", now); d2 != d || ok2 != ok {
			t.Fatalf("%q: (%v, %v) but (%v, %v) with OWS around it", s, d, ok, d2, ok2)
		}
		v := trimOWS(s)
		if v == "" {
			if ok {
				t.Fatalf("accepted an empty value %q", s)
			}
			return
		}
		if isDigit(v[0]) {
			// delay-seconds: exactly the decimal numbers up to a year.
			n, err := strconv.ParseUint(v, 10, 64)
			want := err == nil && n <= uint64(maxDelaySeconds)
			if ok != want {
				t.Fatalf("%q: ok = %v, strconv says %v (%v)", v, ok, n, err)
			}
			if ok && d != time.Duration(n)*time.Second {
				t.Fatalf("%q: got %v", v, d)
			}
			return
		}
		if !ok {
			return
		}
		// A date: never more lenient than net/http, and the same instant
		// except for the RFC 850 form, whose year RFC 9110 resolves and
		// whose zone must be GMT.
		at, err := http.ParseTime(v)
		if err != nil {
			t.Fatalf("accepted %q that net/http rejects: %v", v, err)
		}
		if rfc850 := isAlpha(v[3]); rfc850 {
			if !strings.HasSuffix(v, " GMT") {
				t.Fatalf("accepted the RFC 850 date %q in another zone than GMT", v)
			}
		} else if want := max(at.Sub(now), 0); d != want {
			t.Fatalf("%q: got %v, net/http says %v", v, d, want)
		}
		// The instant reached, written as an IMF-fixdate, reads back alike.
		if d > 0 && d%time.Second == 0 {
			imf := now.Add(d).Format(http.TimeFormat)
			if d2, ok2 := ParseRetryAfter(imf, now); !ok2 || d2 != d {
				t.Fatalf("%q: %v, but its IMF-fixdate %q gives (%v, %v)", v, d, imf, d2, ok2)
			}
		}
	})
}

func checkQuotas(t *testing.T, qs []Status) {
	t.Helper()
	for _, q := range qs {
		if q.Remaining < 0 || q.Limit < 0 || q.Reset < 0 || q.Reset > MaxReset || q.Window < 0 {
			t.Fatalf("absurd quota accepted: %+v", q)
		}
		// Every form counts in whole seconds: a fraction betrays an
		// overflow in the conversion to a Duration.
		if q.Reset%time.Second != 0 || q.Window%time.Second != 0 {
			t.Fatalf("fractional quota times: %+v", q)
		}
	}
	if len(qs) > MaxItems {
		t.Fatalf("%d quotas", len(qs))
	}
}

func FuzzParseIETF(f *testing.F) {
	for _, s := range [][2]string{
		{`"per-ip";r=42;t=17`, `"per-ip";q=100;w=60`},
		{`"per-ip";r=42;t=17, "login";r=1;t=250`, `"per-ip";q=100;w=60, "login";q=5;w=300`},
		{`tok;r=0;t=1;pk=:AAE=:`, `tok;q=1;qu="requests"`},
		{`"a\"b";r=1;t=1`, `"a\"b";q=9`},
		{`(a b);r=1, ?1;t=2, @12;r=3, %"%c3%bc";r=1;t=1`, `1.5;q=1`},
		{`limit=100, remaining=42, reset=17`, ``},
		{`remaining=0, reset=18446744074`, ``},
		{`"p";r=1;t=1,`, `"p";q=`},
		{`"p";r=-1;t=99999999`, `"p";q=-5;w=-1`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rl, policy string) {
		h := http.Header{"Ratelimit": {rl}, "Ratelimit-Policy": {policy}}
		qs := Parse(h, epoch)
		checkQuotas(t, qs)
		checkStrict(t, rl, policy, qs)
		// The structured-field parser must terminate and agree with itself.
		for _, dict := range []bool{false, true} {
			valid := sfValid(rl, dict)
			it := newSFIter(rl, dict)
			n := 0
			for _, ok := it.next(); ok; _, ok = it.next() {
				if n++; n > len(rl)+1 {
					t.Fatalf("iterator does not advance on %q", rl)
				}
			}
			if it.bad == valid {
				t.Fatalf("sfValid(%q, %v) = %v, but iteration bad = %v", rl, dict, valid, it.bad)
			}
		}
	})
}

// checkStrict holds the strict parsers to the client's: what ParseItems
// accepts, Parse reads alike (but for resets it does not believe), with
// the limits and windows ParsePolicies finds.
func checkStrict(t *testing.T, rl, policy string, qs []Status) {
	t.Helper()
	items, err := ParseItems([]string{rl})
	policies, perr := ParsePolicies([]string{policy})
	for _, it := range items {
		if it.Remaining < 0 || it.Reset < 0 {
			t.Fatalf("ParseItems(%q): negative count in %+v", rl, it)
		}
	}
	for _, p := range policies {
		if p.Quota < 0 || p.Window < 0 {
			t.Fatalf("ParsePolicies(%q): negative count in %+v", policy, p)
		}
	}
	if err != nil || len(items) > MaxItems {
		return
	}
	if perr != nil {
		if sfValid(policy, false) {
			return // Parse still reads the policies that ParsePolicies rejects
		}
		policies = nil // as Parse ignores a malformed field
	}
	policies = policies[:min(len(policies), MaxItems)] // Parse reads no more
	var want []Status
	for _, it := range items {
		if it.Reset > int64(MaxReset/time.Second) {
			continue
		}
		s := Status{Policy: it.Name, Remaining: it.Remaining, Reset: time.Duration(it.Reset) * time.Second}
		for _, p := range policies {
			if p.Name == it.Name {
				s.Limit, s.Concurrent = p.Quota, p.Concurrent
				if p.Window > 0 && p.Window <= maxWindowSeconds {
					s.Window = time.Duration(p.Window) * time.Second
				}
				break
			}
		}
		want = append(want, s)
	}
	if len(want) == 0 {
		return // Parse may have fallen back to the dictionary form
	}
	if !slices.Equal(qs, want) {
		t.Fatalf("RateLimit %q, RateLimit-Policy %q: Parse %+v, the strict parsers %+v", rl, policy, qs, want)
	}
}

func FuzzParseLegacy(f *testing.F) {
	unix := epoch.Unix()
	for _, s := range [][3]string{
		{"100", "42", "17"},
		{"10, 10;w=1", "9", "1"},
		{"5000", "4999", strconv.FormatInt(unix+3600, 10)},
		{"", "0", strconv.FormatInt(unix-10, 10)},
		{"x", "1.5", "-3"},
		{"1", "1", "999999999999999"},
		{"1", "1", strconv.FormatInt(unix*1000, 10)},
		{"1", "1", "18446744074"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, limit, remaining, reset string) {
		for _, prefix := range []string{"Ratelimit-", "X-Ratelimit-"} {
			h := http.Header{prefix + "Limit": {limit}, prefix + "Remaining": {remaining}, prefix + "Reset": {reset}}
			checkQuotas(t, Parse(h, epoch))
		}
	})
}

package fields

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseIETF(t *testing.T) {
	now := epoch
	s := time.Second
	for _, tc := range []struct {
		name string
		h    http.Header
		want []Status
	}{
		{"single with policy", hdr("RateLimit-Policy", `"per-ip";q=100;w=60`, "RateLimit", `"per-ip";r=42;t=17`),
			[]Status{{Policy: "per-ip", Limit: 100, Remaining: 42, Reset: 17 * s, Window: 60 * s}}},
		{"several policies", hdr(
			"RateLimit-Policy", `"per-ip";q=100;w=60, "login";q=5;w=300`,
			"RateLimit", `"per-ip";r=42;t=17, "login";r=1;t=250`),
			[]Status{
				{Policy: "per-ip", Limit: 100, Remaining: 42, Reset: 17 * s, Window: 60 * s},
				{Policy: "login", Limit: 5, Remaining: 1, Reset: 250 * s, Window: 300 * s},
			}},
		{"no policy field", hdr("RateLimit", `"default";r=0;t=3`),
			[]Status{{Policy: "default", Remaining: 0, Reset: 3 * s}}},
		{"tokens, OWS, tabs, extra params, other types", hdr(
			"RateLimit-Policy", "  burst;q=10;w=1;qu=\"requests\";pk=:cHsdsRa894==:\t,\"daily\";q=1000;w=86400 ",
			"RateLimit", `burst;r=3;t=1;pk=:cHsdsRa894==:, "daily";r=500;t=40000;x=?1;y=1.5;z=@1659578233;d=%"f%c3%bc"`),
			[]Status{
				{Policy: "burst", Limit: 10, Remaining: 3, Reset: s, Window: s},
				{Policy: "daily", Limit: 1000, Remaining: 500, Reset: 40000 * s, Window: 86400 * s},
			}},
		{"several field lines are one list", hdr(
			"RateLimit-Policy", `"a";q=10`, "RateLimit-Policy", `"b";q=20;w=2`,
			"RateLimit", `"a";r=1;t=1`, "RateLimit", `"b";r=2;t=2`),
			[]Status{{Policy: "a", Limit: 10, Remaining: 1, Reset: s}, {Policy: "b", Limit: 20, Remaining: 2, Reset: 2 * s, Window: 2 * s}}},
		// RFC 9651 §4.2: the lines are parsed as one value, joined by commas.
		{"a member may span field lines", hdr("RateLimit-Policy", `"a`, "RateLimit-Policy", `b";q=9`,
			"RateLimit", `"a`, "RateLimit", `b";r=1;t=1`),
			[]Status{{Policy: "a, b", Limit: 9, Remaining: 1, Reset: s}}},
		{"an empty policy line is an empty member", hdr("RateLimit-Policy", `"p";q=9`, "RateLimit-Policy", "",
			"RateLimit", `"p";r=1;t=1`),
			[]Status{{Policy: "p", Remaining: 1, Reset: s}}},
		{"escaped name", hdr("RateLimit-Policy", `"a\"b";q=9`, "RateLimit", `"a\"b";r=8;t=7`),
			[]Status{{Policy: `a"b`, Limit: 9, Remaining: 8, Reset: 7 * s}}},
		{"string and token names differ", hdr("RateLimit-Policy", `p;q=9`, "RateLimit", `"p";r=8;t=7`),
			[]Status{{Policy: "p", Remaining: 8, Reset: 7 * s}}},
		{"later duplicate parameters win", hdr("RateLimit", `"p";r=8;t=7;r=2`),
			[]Status{{Policy: "p", Remaining: 2, Reset: 7 * s}}},
		{"items without integer r and t are ignored", hdr("RateLimit",
			`"no-r";t=1, "no-t";r=1, "neg";r=-1;t=1, "dec";r=1.5;t=1, "str";r="1";t=1, "huge";r=1;t=86401, "ok";r=1;t=86400, 5;r=1;t=1, (a b);r=1;t=1`),
			[]Status{{Policy: "ok", Remaining: 1, Reset: 24 * time.Hour}}},
		{"a malformed policy field loses only q and w", hdr("RateLimit-Policy", `"p";q=`, "RateLimit", `"p";r=1;t=1`),
			[]Status{{Policy: "p", Remaining: 1, Reset: s}}},
		{"a policy without q gives no limit", hdr("RateLimit-Policy", `"p";w=60`, "RateLimit", `"p";r=1;t=1`),
			[]Status{{Policy: "p", Remaining: 1, Reset: s}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Parse(tc.h, now))
		})
	}
}

func TestParseRejectsMalformedIETF(t *testing.T) {
	for _, v := range []string{
		`"p";r=1;t=1,`,               // trailing comma
		`"p";r=1;t=1,,"q";r=1`,       // empty member
		`"p;r=1;t=1`,                 // unterminated string
		`"p";R=1;t=1`,                // upper-case key
		`"p";r=1;t=1 "q"`,            // missing comma
		`"p";r=1234567890123456;t=1`, // 16 digits
		`"p";r=1;t=1;`,               // dangling ;
		`"\q";r=1;t=1`,               // bad escape
		"\"\x01\";r=1;t=1",           // control character
		`"p";r=1;t=1, ?2`,            // bad boolean
		`"p";r=1;t=1, :abc`,          // unterminated bytes
		`"p";r=1;t=1, %"%C3"`,        // upper-case hex
		`"p";r=1;t=1, %"%c3"`,        // truncated UTF-8
		`"p";r=1;t=1, (a`,            // unterminated inner list
		`"p";r=1;t=1, 1.`,            // decimal without fraction
		`"p";r=1;t=1, 1.2345`,        // 4 fractional digits
	} {
		h := hdr("RateLimit", v, "RateLimit-Remaining", "5", "RateLimit-Reset", "9")
		// The invalid IETF field is ignored as a whole; the older fields
		// still count.
		assert.Equal(t, []Status{{Remaining: 5, Reset: 9 * time.Second}}, Parse(h, epoch), "%q", v)
	}
	// Field lines are one value (RFC 9651 §4.2): an empty line, or a
	// trailing comma before the next line, is an empty member.
	for _, lines := range [][]string{{"", `"p";r=1;t=1`}, {`"p";r=1;t=1`, ""}, {`"p";r=1;t=1,`, `"q";r=1;t=1`}, {"remaining=1", "", "reset=2"}} {
		h := http.Header{"Ratelimit": lines, "Ratelimit-Remaining": {"5"}, "Ratelimit-Reset": {"9"}}
		assert.Equal(t, []Status{{Remaining: 5, Reset: 9 * time.Second}}, Parse(h, epoch), "%q", lines)
	}
}

func TestParseOlderForms(t *testing.T) {
	now := epoch
	s := time.Second
	unix := now.Unix()
	for _, tc := range []struct {
		name string
		h    http.Header
		want []Status
	}{
		{"dictionary", hdr("RateLimit", "limit=100, remaining=42, reset=17"),
			[]Status{{Limit: 100, Remaining: 42, Reset: 17 * s}}},
		{"dictionary without limit", hdr("RateLimit", "remaining=0,reset=5"),
			[]Status{{Remaining: 0, Reset: 5 * s}}},
		{"dictionary missing reset", hdr("RateLimit", "limit=100, remaining=42"), nil},
		{"dictionary negative", hdr("RateLimit", "limit=100, remaining=-1, reset=17"), nil},
		{"dictionary negative reset", hdr("RateLimit", "remaining=1, reset=-17"), nil},
		{"dictionary reset over a day", hdr("RateLimit", "remaining=1, reset=86401"), nil},
		// 18446744074 s is 2^64 ns + 0.29 s: multiplied unchecked, it wraps
		// into a plausible 290ms.
		{"dictionary reset that would overflow", hdr("RateLimit", "remaining=0, reset=18446744074"), nil},
		{"dictionary reset of 15 digits", hdr("RateLimit", "remaining=0, reset=999999999999999"), nil},
		{"triple", hdr("RateLimit-Limit", "100", "RateLimit-Remaining", "42", "RateLimit-Reset", "17"),
			[]Status{{Limit: 100, Remaining: 42, Reset: 17 * s}}},
		{"triple with early-draft policies", hdr("RateLimit-Limit", "10, 10;w=1, 50;w=60", "RateLimit-Remaining", "9", "RateLimit-Reset", "1"),
			[]Status{{Limit: 10, Remaining: 9, Reset: s}}},
		{"triple without limit", hdr("RateLimit-Remaining", "1", "RateLimit-Reset", "2"),
			[]Status{{Remaining: 1, Reset: 2 * s}}},
		{"x- delta", hdr("X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "59", "X-RateLimit-Reset", "30"),
			[]Status{{Limit: 60, Remaining: 59, Reset: 30 * s}}},
		{"x- epoch", hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", itoa(unix+3600)),
			[]Status{{Limit: 5000, Remaining: 4999, Reset: time.Hour}}},
		{"x- epoch in the recent past", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(unix-5)),
			[]Status{{Remaining: 0, Reset: 0}}},
		{"x- epoch days ago", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(unix-3*86400)), nil},
		{"x- epoch days ahead", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(unix+3*86400)), nil},
		{"x- epoch milliseconds are absurd", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(unix*1000)), nil},
		{"x- delta over a day", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "86401"), nil},
		{"x- non-integer", hdr("X-RateLimit-Remaining", "1.5", "X-RateLimit-Reset", "3"), nil},
		{"x- negative", hdr("X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", "3"), nil},
		{"x- garbage limit is dropped", hdr("X-RateLimit-Limit", "lots", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "3"),
			[]Status{{Remaining: 1, Reset: 3 * s}}},
		{"nothing", hdr("Content-Type", "text/plain"), nil},
		{"IETF wins over older forms", hdr("RateLimit", `"p";r=1;t=2`, "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "8"),
			[]Status{{Policy: "p", Remaining: 1, Reset: 2 * s}}},
		{"triple wins over x-", hdr("RateLimit-Remaining", "3", "RateLimit-Reset", "4", "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "8"),
			[]Status{{Remaining: 3, Reset: 4 * s}}},
		{"unusable IETF falls back", hdr("RateLimit", `"p";t=2`, "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "8"),
			[]Status{{Remaining: 7, Reset: 8 * s}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Parse(tc.h, now))
		})
	}
}

func TestAppendBoundsItems(t *testing.T) {
	v := ""
	for i := range 40 {
		if i > 0 {
			v += ", "
		}
		v += `"p";r=1;t=1`
	}
	assert.Len(t, Parse(hdr("RateLimit", v), epoch), MaxItems)
}

package fields

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSFValidLists(t *testing.T) {
	valid := []string{
		``, ` `, `a`, `"x"`, `1`, `-1`, `1.5`, `-0.001`, `?0`, `?1`, `:aGVsbG8=:`, `@1659578233`,
		`%"f%c3%bc%20x"`, `*tok/en:x`, `a, b`, `a,b`, "a ,\tb", `a;x;y=1;z="s"`, `a; x=1`,
		`(a b);q=1, ()`, `( a  b )`, `("x";p=1 2)`, `999999999999999`, `123456789012.123`,
		// RFC 9651 §4.2.7: missing padding and non-zero pad bits are accepted.
		`::`, `:aGVsbG8:`, `:aGVsbA:`, `:aGVsbA=:`, `:iZ==:`, `:/+Ah:`,
		// Trailing OWS belongs to the last member.
		"a\t", "a \t ",
	}
	for _, v := range valid {
		assert.True(t, sfValid(v, false), "%q", v)
	}
	invalid := []string{
		`,`, `a,`, `,a`, `a,,b`, `a b`, `"x`, `"\x"`, `1234567890123456`, `1234567890123.1`,
		`1.`, `1.1234`, `-`, `-a`, `?2`, `?`, `:a`, `:a!:`, `@1.5`, `@`, `%x`, `%"%zz"`, `%"%ff"`,
		`a;`, `a;X=1`, `a;x=`, `(a`, `(a,b)`, `(a)b`, `"é"`, `a=1`, "\x00", `[`, `a;x=(b)`,
		// Not base64 even with padding synthesized (RFC 9651 §4.2.7).
		`:0:`, `:00000:`, `:=:`, `:====:`, `:a=b=:`, `:aGVsbG8==:`, `:aGVsbA===:`, `a;pk=:0:`, `:_-Ah:`,
		// Only SP is discarded before the value (RFC 9651 §4.2).
		"\ta", " \ta", "\t", " \t",
	}
	for _, v := range invalid {
		assert.False(t, sfValid(v, false), "%q", v)
	}
}

func TestSFValidDictionaries(t *testing.T) {
	for _, v := range []string{`a=1, b=2`, `a, b;x=1, c=(1 2)`, `limit=100, remaining=42, reset=17`, `a=?0`} {
		assert.True(t, sfValid(v, true), "%q", v)
	}
	for _, v := range []string{`A=1`, `a=`, `a=1,`, `"a"=1`, `1=1`, `a==1`, "\ta=1", `a=:0:`, `a;p=:=:`} {
		assert.False(t, sfValid(v, true), "%q", v)
	}
}

func TestSFIterMembers(t *testing.T) {
	it := newSFIter(`"a";r=1;t=2, tok;x, (1 2);y=3, 4.5`, false)
	m, ok := it.next()
	require.True(t, ok)
	assert.Equal(t, sfString, m.item.kind)
	assert.Equal(t, "a", m.item.raw)
	r, okR := m.param("r")
	assert.True(t, okR)
	assert.EqualValues(t, 1, r)
	_, okZ := m.param("z")
	assert.False(t, okZ)

	m, ok = it.next()
	require.True(t, ok)
	assert.Equal(t, sfToken, m.item.kind)
	_, okX := m.param("x")
	assert.False(t, okX, "a bare parameter is Boolean true, not an Integer")

	m, ok = it.next()
	require.True(t, ok)
	assert.Equal(t, sfInnerList, m.item.kind)
	y, _ := m.param("y")
	assert.EqualValues(t, 3, y)

	m, ok = it.next()
	require.True(t, ok)
	assert.Equal(t, sfDecimal, m.item.kind)
	_, ok = it.next()
	assert.False(t, ok)
	assert.False(t, it.bad)

	assert.Equal(t, `a"b\c`, unescapeSF(`a\"b\\c`))
	assert.Equal(t, "plain", unescapeSF("plain"))
}

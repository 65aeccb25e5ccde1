package sluicegrpc

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"unsafe"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluice-go/sluice/adapters/admit"
)

// call is the admit.View and admit.Writer of a gRPC call, or of one message
// of a stream, pooled by its limit, so that deciding allocates no view: the
// incoming metadata are its request header (keys lower-case), its full
// method its path and route, its method POST, as gRPC's HTTP/2 request's.
// The fields the engine sets are collected, and sent as header metadata
// (allowed) or trailer metadata (refused) once it has decided.
type call struct {
	ctx    context.Context
	method string // the full method, "/pkg.Service/Method"

	n      int               // fields set
	keys   [maxFields]string // their canonical names
	vals   [maxFields]string // their values
	text   []byte            // the values set as bytes, until they are made strings
	spans  [maxFields][2]int // where each byte value is in text; [-1, -1] for a string value
	md     metadata.MD       // the metadata handed to grpc, which copies it
	mdv    [maxFields][1]string
	mdKeys [maxFields]string // the keys in md
	mdN    int

	status int    // the HTTP-equivalent status of a refusal (WriteResponse), 0 if none
	body   []byte // its body, a status message if it is one
}

// pushbackName is the push-back among the fields (see PushbackKey).
const pushbackName = "Grpc-Retry-Pushback-Ms"

// maxFields is the most fields one decision sets: RateLimit-Policy,
// RateLimit and Retry-After (IETF), or three figures and Retry-After (the
// older styles), and Cache-Control.
const maxFields = 8

func (c *call) reset(ctx context.Context, method string) {
	c.ctx, c.method = ctx, method
	c.n, c.status = 0, 0
	c.text, c.body = c.text[:0], c.body[:0]
}

// release drops what c holds of its call.
func (c *call) release() {
	c.ctx = nil
	clear(c.vals[:c.n])
	for _, k := range c.mdKeys[:c.mdN] {
		delete(c.md, k) // not clear: a cleared map gives its groups up, and grows again
	}
	c.n, c.mdN = 0, 0
}

func (c *call) Context() context.Context { return c.ctx }

// Peer is the address of the connection's other end, the zero Addr for a
// peer that is not an IP address (a Unix socket, an in-process pipe).
func (c *call) Peer() netip.Addr {
	p, ok := peer.FromContext(c.ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}
	}
	switch a := p.Addr.(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr()
	case *net.UDPAddr:
		return a.AddrPort().Addr()
	}
	ap, err := netip.ParseAddrPort(p.Addr.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}

// Header returns the first value of the metadata key name, lower-cased: an
// empty value, a missing key and a binary key ("-bin") alike are "".
func (c *call) Header(name string) string {
	v := c.HeaderValues(name)
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// HeaderValues returns the values of the metadata key name, lower-cased.
// Binary keys ("-bin"), whose values are not text, have none.
func (c *call) HeaderValues(name string) []string {
	var buf [64]byte
	key := lower(buf[:0], name)
	if strings.HasSuffix(key, "-bin") {
		return nil
	}
	return metadata.ValueFromIncomingContext(c.ctx, key)
}

// lower returns name in lower case, in buf if it fits.
func lower(buf []byte, name string) string {
	if len(name) > cap(buf) {
		return strings.ToLower(name)
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf = append(buf, b)
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

func (c *call) Method() string { return "POST" }
func (c *call) Path() string   { return c.method }
func (c *call) Route() string  { return c.method }

// SetHeader records a field; Cache-Control and Content-Type, which
// have no meaning in gRPC, are dropped.
func (c *call) SetHeader(key, value string) {
	if i := c.set(key); i >= 0 {
		c.vals[i], c.spans[i] = value, [2]int{-1, -1}
	}
}

// SetHeaderBytes records a field whose value is valid only during the
// call, copied to c.text (see admit.BytesWriter).
func (c *call) SetHeaderBytes(key string, value []byte) {
	if i := c.set(key); i >= 0 {
		start := len(c.text)
		c.text = append(c.text, value...)
		c.vals[i], c.spans[i] = "", [2]int{start, len(c.text)}
	}
}

// SetRateLimit sets an allowed call's IETF fields in one call, unless
// either is set (see admit.BytesWriter).
func (c *call) SetRateLimit(policy string, item []byte) bool {
	for i := range c.n {
		if c.keys[i] == "Ratelimit-Policy" || c.keys[i] == "Ratelimit" {
			return false
		}
	}
	c.SetHeader("Ratelimit-Policy", policy)
	c.SetHeaderBytes("Ratelimit", item)
	return true
}

// A call is a View and a BytesWriter: a change to either interface breaks
// the build rather than quietly costing an allocation per call.
var (
	_ admit.View        = (*call)(nil)
	_ admit.BytesWriter = (*call)(nil)
)

// set returns the index of the field key, a new one if it was not set, or
// -1 if it is dropped.
func (c *call) set(key string) int {
	switch key {
	case "Cache-Control", "Content-Type":
		return -1
	}
	for i := range c.n {
		if c.keys[i] == key {
			return i
		}
	}
	if c.n == maxFields {
		return -1 // never: the engine sets fewer
	}
	c.keys[c.n] = key
	c.n++
	return c.n - 1
}

// ResponseHeader returns a field set so far in this decision.
func (c *call) ResponseHeader(key string) string {
	for i := range c.n {
		if c.keys[i] == key {
			return c.value(i)
		}
	}
	return ""
}

// value returns field i's value, as bytes in text or a string.
func (c *call) value(i int) string {
	if sp := c.spans[i]; sp[0] >= 0 {
		return string(c.text[sp[0]:sp[1]])
	}
	return c.vals[i]
}

// WriteResponse records a refusal: its status, and a body, which becomes
// the status message when it is text.
func (c *call) WriteResponse(status int, contentType string, body []byte) {
	c.status = status
	if strings.HasPrefix(contentType, "text/plain") {
		c.body = append(c.body[:0], body...)
	}
}

// metadata returns the fields set as metadata, lower-case keys, the values
// made strings with one allocation: a map of c's own, which grpc copies
// (SetHeader, SetTrailer), nil if there are none.
func (c *call) metadata() metadata.MD {
	if c.n == 0 {
		return nil
	}
	var text string
	if len(c.text) > 0 {
		text = string(c.text)
	}
	if c.md == nil {
		c.md = make(metadata.MD, maxFields)
	}
	for i := range c.n {
		v := c.vals[i]
		if sp := c.spans[i]; sp[0] >= 0 {
			v = text[sp[0]:sp[1]]
		}
		c.mdv[i][0] = v
		k := metadataKey(c.keys[i])
		c.md[k] = c.mdv[i][:]
		c.mdKeys[i] = k
	}
	c.mdN = c.n
	return c.md
}

// metadataKey returns the metadata key of a field's canonical name.
func metadataKey(name string) string {
	switch name {
	case "Ratelimit":
		return "ratelimit"
	case "Ratelimit-Policy":
		return "ratelimit-policy"
	case "Retry-After":
		return "retry-after"
	case "Ratelimit-Limit":
		return "ratelimit-limit"
	case "Ratelimit-Remaining":
		return "ratelimit-remaining"
	case "Ratelimit-Reset":
		return "ratelimit-reset"
	case "X-Ratelimit-Limit":
		return "x-ratelimit-limit"
	case "X-Ratelimit-Remaining":
		return "x-ratelimit-remaining"
	case "X-Ratelimit-Reset":
		return "x-ratelimit-reset"
	case pushbackName:
		return PushbackKey
	}
	return strings.ToLower(name)
}

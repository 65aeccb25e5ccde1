package admit

import (
	"testing"
	"unsafe"
)

// TestKeyStringsStayPut holds keyString's carving to what a kept key needs:
// every key it returned still reads as it did, however many were carved
// after it, of whatever lengths, through the same Request.
func TestKeyStringsStayPut(t *testing.T) {
	var r Request
	var kept, want []string
	buf := make([]byte, 0, 128)
	for i := range 2000 {
		buf = buf[:0]
		for j := range i % (maxCarved + 10) { // some longer than a slab carves
			buf = append(buf, byte('a'+(i+j)%26))
		}
		want = append(want, string(buf))
		kept = append(kept, r.keyString(buf))
		clear(buf[:cap(buf)]) // the caller's buffer is reused
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Fatalf("key %d reads %q, want %q", i, kept[i], want[i])
		}
	}
	r.clientText = "192.0.2.1"
	if s := r.keyString([]byte("192.0.2.1")); unsafe.StringData(s) != unsafe.StringData(r.clientText) {
		t.Error("a key equal to the client's text is not that text")
	}
}

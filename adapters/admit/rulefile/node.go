package rulefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Limits on a rule file, which a hostile or broken file meets long before
// it costs much: Parse and every syntax's parser refuse a file past them.
const (
	MaxSize  = 4 << 20 // bytes
	MaxDepth = 32      // nesting of maps and lists
	MaxNodes = 1 << 20 // values of every kind
)

// Kind is the kind of a Node.
type Kind uint8

// Kinds of nodes: a syntax's values, whatever its spelling.
const (
	Null Kind = iota
	Bool
	Number
	String
	List
	Map
)

var kindNames = [...]string{"null", "a boolean", "a number", "a string", "a list", "a map"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Node is a value of a rule file with where it was written: the tree a
// syntax's parser (JSON here, YAML in package ruleyaml) gives Decode.
// Numbers keep their text, so that no value is rounded before it is read.
type Node struct {
	Kind  Kind
	Text  string  // a scalar's text: "true", "12", "1m"
	Line  int     // 1-based
	Col   int     // 1-based, in bytes
	Items []*Node // a List's
	Keys  []*Node // a Map's keys (String nodes), in order
	Vals  []*Node // a Map's values, Vals[i] that of Keys[i]
}

// ParseJSON reads a JSON rule file from r into a tree, refusing one larger
// than MaxSize, nested deeper than MaxDepth, with more than MaxNodes
// values, or with a key twice in one object. name is the file's name in
// errors.
func ParseJSON(name string, r io.Reader) (*Node, error) {
	data, err := readLimited(name, r)
	if err != nil {
		return nil, err
	}
	p := &jsonParser{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data)), lines: lineStarts(data)}
	p.dec.UseNumber()
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errAt(p.dec.InputOffset(), "more than one value in the file")
	}
	return root, nil
}

// readLimited reads r whole, refusing more than MaxSize bytes.
func readLimited(name string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("rulefile: %s: %w", name, err)
	}
	if len(data) > MaxSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d bytes", MaxSize)}
	}
	return data, nil
}

type jsonParser struct {
	name  string
	data  []byte
	lines []int // the offset each line starts at
	dec   *json.Decoder
	nodes int
}

// errAt is an *Error at byte offset off of the file.
func (p *jsonParser) errAt(off int64, msg string) error {
	line, col := p.position(off)
	return &Error{File: p.name, Line: line, Col: col, Msg: msg}
}

// lineStarts returns the offset each line of data starts at.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// position returns the line and column of byte offset off, in time
// logarithmic in the file's lines.
func (p *jsonParser) position(off int64) (line, col int) {
	o := int(min(max(off, 0), int64(len(p.data))))
	i, found := slices.BinarySearch(p.lines, o)
	if !found {
		i--
	}
	return i + 1, o - p.lines[i] + 1
}

// start returns the offset at which the next token begins: the decoder's
// offset past the previous one, past blanks and separators.
func (p *jsonParser) start() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

func (p *jsonParser) value(depth int) (*Node, error) {
	off := p.start()
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, p.errAt(se.Offset, "JSON: "+se.Error())
		}
		if err == io.EOF {
			return nil, p.errAt(int64(len(p.data)), "JSON: unexpected end of file")
		}
		return nil, p.errAt(off, "JSON: "+err.Error())
	}
	if p.nodes++; p.nodes > MaxNodes {
		return nil, p.errAt(off, fmt.Sprintf("more than %d values", MaxNodes))
	}
	line, col := p.position(off)
	n := &Node{Line: line, Col: col}
	switch t := tok.(type) {
	case nil:
		n.Kind = Null
	case bool:
		n.Kind, n.Text = Bool, fmt.Sprint(t)
	case json.Number:
		n.Kind, n.Text = Number, string(t)
	case string:
		n.Kind, n.Text = String, t
	case json.Delim:
		if depth >= MaxDepth {
			return nil, p.errAt(off, fmt.Sprintf("nested deeper than %d", MaxDepth))
		}
		if t == '[' {
			n.Kind = List
			for p.dec.More() {
				item, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Items = append(n.Items, item)
			}
		} else {
			n.Kind = Map
			seen := map[string]bool{}
			for p.dec.More() {
				k, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				if seen[k.Text] {
					return nil, &Error{File: p.name, Line: k.Line, Col: k.Col, Field: k.Text, Msg: "is set twice"}
				}
				seen[k.Text] = true
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Keys, n.Vals = append(n.Keys, k), append(n.Vals, v)
			}
		}
		if _, err := p.dec.Token(); err != nil { // the closing delimiter
			return nil, p.errAt(p.dec.InputOffset(), "JSON: "+err.Error())
		}
	}
	return n, nil
}

// Error is a rule file's error: where, which field, and what is wrong.
type Error struct {
	File  string
	Line  int // 0 if the error is the whole file's
	Col   int
	Field string // the field's path, "rules[2].key.header"; "" if none
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("rulefile: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(" ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

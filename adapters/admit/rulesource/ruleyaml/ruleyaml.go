// Package ruleyaml reads rule files in YAML (package rulefile's schema,
// docs/rules.md) with goccy/go-yaml, into the very rulefile.File a JSON
// file gives: the same checks, the same errors naming file, line and field.
//
// A YAML file may be at most MaxSize bytes, a quarter of a JSON one's:
// the parser takes time that grows faster than the file (docs/rules.md
// has the figures), and a file of many policies (one per tenant) reads
// faster as JSON.
//
// Anchors, aliases, merge keys, tags and documents after the first are
// refused: a rule file says what it means where it says it. Before the
// parser sees a byte, a scan refuses a file nested deeper than
// rulefile.MaxDepth, which would cost the parser time quadratic in its
// depth.
package ruleyaml

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/sluice-go/sluice/adapters/admit/rulefile"
)

// MaxSize is the largest YAML rule file Load reads, in bytes.
const MaxSize = 1 << 20

// Load reads a YAML rule file from r; name is its name in errors.
func Load(name string, r io.Reader) (*rulefile.File, error) {
	root, err := Parse(name, r)
	if err != nil {
		return nil, err
	}
	return rulefile.Decode(name, root)
}

// LoadFile reads the rule file at path: YAML, or JSON if its name ends
// in ".json".
func LoadFile(path string) (*rulefile.File, error) {
	if filepath.Ext(path) == ".json" {
		return rulefile.LoadFile(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ruleyaml: %w", err)
	}
	defer f.Close()
	return Load(filepath.Base(path), f)
}

// Parse reads YAML from r into the tree rulefile.Decode checks.
func Parse(name string, r io.Reader) (*rulefile.Node, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("ruleyaml: %s: %w", name, err)
	}
	if len(data) > MaxSize {
		return nil, &rulefile.Error{File: name, Msg: fmt.Sprintf("larger than %d bytes; write a file this large in JSON", MaxSize)}
	}
	if line, ok := tooDeep(data); !ok {
		return nil, &rulefile.Error{File: name, Line: line, Col: 1, Msg: fmt.Sprintf("nested deeper than %d", rulefile.MaxDepth)}
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(name, err)
	}
	switch len(f.Docs) {
	case 0:
		return &rulefile.Node{Kind: rulefile.Map, Line: 1, Col: 1}, nil
	case 1:
	default:
		return nil, &rulefile.Error{File: name, Msg: "has more than one document"}
	}
	c := &converter{name: name}
	if f.Docs[0].Body == nil {
		return &rulefile.Node{Kind: rulefile.Map, Line: 1, Col: 1}, nil
	}
	return c.node(f.Docs[0].Body, 0)
}

// yamlError is the parser's error, with its position when it has one.
func yamlError(name string, err error) error {
	var se interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if errors.As(err, &se) && se.GetToken() != nil {
		p := se.GetToken().Position
		return &rulefile.Error{File: name, Line: p.Line, Col: p.Column, Msg: "YAML: " + se.GetMessage()}
	}
	return &rulefile.Error{File: name, Msg: "YAML: " + err.Error()}
}

type converter struct {
	name  string
	nodes int
}

func (c *converter) err(n ast.Node, format string, args ...any) error {
	e := &rulefile.Error{File: c.name, Msg: fmt.Sprintf(format, args...)}
	if t := n.GetToken(); t != nil {
		e.Line, e.Col = t.Position.Line, t.Position.Column
	}
	return e
}

func (c *converter) node(n ast.Node, depth int) (*rulefile.Node, error) {
	if c.nodes++; c.nodes > rulefile.MaxNodes {
		return nil, c.err(n, "more than %d values", rulefile.MaxNodes)
	}
	if depth > rulefile.MaxDepth {
		return nil, c.err(n, "nested deeper than %d", rulefile.MaxDepth)
	}
	out := &rulefile.Node{}
	if t := n.GetToken(); t != nil {
		out.Line, out.Col = t.Position.Line, t.Position.Column
	}
	switch n := n.(type) {
	case *ast.NullNode:
		out.Kind = rulefile.Null
	case *ast.BoolNode:
		out.Kind, out.Text = rulefile.Bool, fmt.Sprint(n.Value)
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		out.Kind, out.Text = rulefile.Number, n.GetToken().Value
	case *ast.StringNode:
		out.Kind, out.Text = rulefile.String, n.Value
	case *ast.LiteralNode:
		out.Kind, out.Text = rulefile.String, n.Value.Value
	case *ast.SequenceNode:
		out.Kind = rulefile.List
		for _, v := range n.Values {
			item, err := c.node(v, depth+1)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, item)
		}
	case *ast.MappingNode:
		out.Kind = rulefile.Map
		if err := c.mapping(out, n.Values, depth); err != nil {
			return nil, err
		}
	case *ast.MappingValueNode:
		out.Kind = rulefile.Map
		if err := c.mapping(out, []*ast.MappingValueNode{n}, depth); err != nil {
			return nil, err
		}
	case *ast.AnchorNode, *ast.AliasNode, *ast.MergeKeyNode:
		return nil, c.err(n, "YAML anchors, aliases and merge keys are not supported: write each value where it applies")
	case *ast.TagNode:
		return nil, c.err(n, "YAML tags are not supported")
	default:
		return nil, c.err(n, "YAML %v is not supported", n.Type())
	}
	return out, nil
}

func (c *converter) mapping(out *rulefile.Node, values []*ast.MappingValueNode, depth int) error {
	seen := map[string]bool{}
	for _, mv := range values {
		k, err := c.node(mv.Key, depth+1)
		if err != nil {
			return err
		}
		switch k.Kind {
		case rulefile.String, rulefile.Number, rulefile.Bool:
		default:
			return c.err(mv.Key, "a key must be a string, not %v", k.Kind)
		}
		k.Kind = rulefile.String
		if seen[k.Text] {
			return &rulefile.Error{File: c.name, Line: k.Line, Col: k.Col, Field: k.Text, Msg: "is set twice"}
		}
		seen[k.Text] = true
		v, err := c.node(mv.Value, depth+1)
		if err != nil {
			return err
		}
		out.Keys, out.Vals = append(out.Keys, k), append(out.Vals, v)
	}
	return nil
}

// Package rulefile reads the rules of an admit.Config from data, a rule
// file in JSON (package ruleyaml reads YAML), into the very structures the
// Go API builds: policies (core.PolicyConfig), rules with their keys,
// routes, costs, tiers and modes, the concurrency limit and its classes,
// and the failure mode. The Go API stays the first way to write rules;
// a file is a second door to it, not a second engine. docs/rules.md is the
// schema.
//
//	f, err := rulefile.LoadFile("rules.json")
//	rules, err := rulefile.Compile(f, rulefile.Env{Store: memory.New(), Hooks: hooks})
//	mw, err := sluicehttp.New(rules.Config())
//	live := rulefile.NewLive(rules, env)
//	err = live.Apply(next) // a later version, swapped in while requests flow
//
// What data cannot hold (a Select, Cost or Skip function, a user lookup, a
// key computed in Go) a file names, and Hooks holds under that name.
//
// Every error is an *Error naming the file, line and field. A file larger
// than MaxSize, nested deeper than MaxDepth, with a field the schema does
// not know, a key set twice, or a number that is not a whole number in its
// field's range is refused; nothing is rounded, truncated or defaulted in
// silence.
package rulefile

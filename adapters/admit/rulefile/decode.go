package rulefile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
)

// File is a rule file, read and checked against the schema (docs/rules.md):
// every field known, every value of its type and in range. Compile turns
// it into an admit.Config.
type File struct {
	name    string
	digest  string
	label   string
	top     topDef
	pols    []*policyDef
	rules   []*ruleDef
	conc    *concDef
	classes *classDef
	fail    failDef
}

// Load reads a JSON rule file from r; name is its name in errors. Package
// ruleyaml reads YAML into the very same File.
func Load(name string, r io.Reader) (*File, error) {
	root, err := ParseJSON(name, r)
	if err != nil {
		return nil, err
	}
	return Decode(name, root)
}

// LoadFile reads the JSON rule file at path.
func LoadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rulefile: %w", err)
	}
	defer f.Close()
	return Load(filepath.Base(path), f)
}

// Version identifies the file's content: the "version" it states, if any,
// then a digest of its values (not of their spelling), the same for the
// same rules in JSON or YAML, on every instance.
func (f *File) Version() string {
	if f.label != "" {
		return f.label + "-" + f.digest[:12]
	}
	return f.digest[:12]
}

// Name returns the file's name, as errors give it.
func (f *File) Name() string { return f.name }

type topDef struct {
	headers, proxyHeader string
	trusted              []string
	ipv6                 int
	estimates, advertise bool
	shadow               bool
}

type policyDef struct {
	n      *Node
	path   string
	cfg    core.PolicyConfig
	fields map[string]*Node // the fields as written, for errors
	shadow float64
}

type ruleDef struct {
	n       *Node
	path    string
	policy  string
	polNode *Node
	tiers   *tierDef
	key     *keyDef
	routes  []string
	cost    int64
	costFn  string
	charge  [][2]int
	skip    string
}

type tierDef struct {
	n     *Node
	by    *keyDef
	vals  []string
	names []string
	nodes []*Node
	def   string
	defN  *Node
}

type keyDef struct {
	n      *Node
	path   string
	kind   string // client-ip, route, method, header, user, const, hook, join
	arg    string
	except []string
	parts  []*keyDef
}

type concDef struct {
	n                   *Node
	limit, perKey, q    int
	maxWait, maxLatency time.Duration
	key                 *keyDef
}

type classDef struct {
	n                   *Node
	critical, sheddable []string
	hook                string
}

type failDef struct {
	n          *Node
	closed     bool
	retryAfter time.Duration
	share      int
}

// Decode checks a tree a syntax's parser gave (see Node) against the
// schema and returns the File it describes. name is the file's name in
// errors, each of which is an *Error naming the line and field.
func Decode(name string, root *Node) (*File, error) {
	d := &decoder{name: name}
	f := &File{name: name}
	if err := d.top(f, root); err != nil {
		return nil, err
	}
	h := sha256.New()
	digest(h, root)
	f.digest = hex.EncodeToString(h.Sum(nil))
	return f, nil
}

// digest writes n's values, each with its kind, to w.
func digest(w io.Writer, n *Node) {
	fmt.Fprintf(w, "%d:%d:%s;", n.Kind, len(n.Text), n.Text)
	for _, c := range n.Items {
		digest(w, c)
	}
	for i := range n.Keys {
		digest(w, n.Keys[i])
		digest(w, n.Vals[i])
	}
	fmt.Fprint(w, ".")
}

type decoder struct{ name string }

func (d *decoder) err(n *Node, field, format string, args ...any) error {
	e := &Error{File: d.name, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Col
	}
	return e
}

// object is a Map node being read: get marks a field read, and done
// refuses the fields no get asked for.
type object struct {
	d    *decoder
	n    *Node
	path string
	read []bool
}

func (d *decoder) object(n *Node, path string) (*object, error) {
	if n.Kind != Map {
		return nil, d.err(n, path, "must be a map, not %v", n.Kind)
	}
	return &object{d: d, n: n, path: path, read: make([]bool, len(n.Keys))}, nil
}

func (o *object) field(name string) string {
	if o.path == "" {
		return name
	}
	return o.path + "." + name
}

func (o *object) get(name string) *Node {
	for i, k := range o.n.Keys {
		if k.Text == name {
			o.read[i] = true
			if o.n.Vals[i].Kind == Null {
				return nil
			}
			return o.n.Vals[i]
		}
	}
	return nil
}

func (o *object) done() error {
	for i, k := range o.n.Keys {
		if !o.read[i] {
			return o.d.err(k, o.field(k.Text), "is not a field here (see docs/rules.md)")
		}
	}
	return nil
}

func (o *object) str(name string, dst *string) error {
	n := o.get(name)
	if n == nil {
		return nil
	}
	if n.Kind != String {
		return o.d.err(n, o.field(name), "must be a string, not %v", n.Kind)
	}
	*dst = n.Text
	return nil
}

func (o *object) boolean(name string, dst *bool) error {
	n := o.get(name)
	if n == nil {
		return nil
	}
	if n.Kind != Bool {
		return o.d.err(n, o.field(name), "must be true or false, not %v", n.Kind)
	}
	*dst = n.Text == "true"
	return nil
}

// integer reads a whole number in [lo, hi]: text that is not one (1e400,
// 1.5, 99999999999999999999) is refused, never rounded.
func (o *object) integer(name string, lo, hi int64, dst *int64) error {
	n := o.get(name)
	if n == nil {
		return nil
	}
	v, err := o.d.integer(n, o.field(name), lo, hi)
	*dst = v
	return err
}

func (d *decoder) integer(n *Node, field string, lo, hi int64) (int64, error) {
	if n.Kind != Number {
		return 0, d.err(n, field, "must be a whole number, not %v", n.Kind)
	}
	v, err := strconv.ParseInt(n.Text, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, d.err(n, field, "must be a whole number from %d to %d, got %.40s", lo, hi, n.Text)
	}
	return v, nil
}

func (o *object) smallInt(name string, lo, hi int, dst *int) error {
	var v int64
	err := o.integer(name, int64(lo), int64(hi), &v)
	if err == nil && o.get(name) != nil {
		*dst = int(v)
	}
	return err
}

// duration reads a Go duration ("1m", "250ms"), positive and at most
// 366 days.
func (o *object) duration(name string, dst *time.Duration) error {
	n := o.get(name)
	if n == nil {
		return nil
	}
	if n.Kind != String {
		return o.d.err(n, o.field(name), "must be a duration such as \"1m\" or \"250ms\", not %v", n.Kind)
	}
	v, err := time.ParseDuration(n.Text)
	if err != nil || v <= 0 || v > 366*24*time.Hour {
		return o.d.err(n, o.field(name), "must be a positive duration of at most 366 days (\"1m\", \"250ms\"), got %q", n.Text)
	}
	*dst = v
	return nil
}

func (o *object) strings(name string, dst *[]string) error {
	n := o.get(name)
	if n == nil {
		return nil
	}
	v, err := o.d.strings(n, o.field(name))
	*dst = v
	return err
}

func (d *decoder) strings(n *Node, field string) ([]string, error) {
	if n.Kind != List {
		return nil, d.err(n, field, "must be a list of strings, not %v", n.Kind)
	}
	out := make([]string, 0, len(n.Items))
	for i, it := range n.Items {
		if it.Kind != String {
			return nil, d.err(it, fmt.Sprintf("%s[%d]", field, i), "must be a string, not %v", it.Kind)
		}
		out = append(out, it.Text)
	}
	return out, nil
}

func (d *decoder) top(f *File, root *Node) error {
	o, err := d.object(root, "")
	if err != nil {
		return err
	}
	t := &f.top
	for _, step := range []error{
		o.str("version", &f.label),
		o.str("headers", &t.headers),
		o.str("proxy_header", &t.proxyHeader),
		o.strings("trusted_proxies", &t.trusted),
		o.smallInt("ipv6_prefix", 1, 128, &t.ipv6),
		o.boolean("estimates", &t.estimates),
		o.boolean("advertise_concurrency", &t.advertise),
		o.boolean("shadow", &t.shadow),
	} {
		if step != nil {
			return step
		}
	}
	if len(f.label) > 64 {
		return d.err(o.get("version"), "version", "is longer than 64 bytes")
	}
	if n := o.get("policies"); n != nil {
		if f.pols, err = d.policies(n); err != nil {
			return err
		}
	}
	if n := o.get("rules"); n != nil {
		if n.Kind != List {
			return d.err(n, "rules", "must be a list, not %v", n.Kind)
		}
		for i, rn := range n.Items {
			r, err := d.rule(rn, fmt.Sprintf("rules[%d]", i))
			if err != nil {
				return err
			}
			f.rules = append(f.rules, r)
		}
	}
	if n := o.get("concurrency"); n != nil {
		if f.conc, err = d.concurrency(n); err != nil {
			return err
		}
	}
	if n := o.get("classes"); n != nil {
		if f.classes, err = d.classes(n); err != nil {
			return err
		}
	}
	if n := o.get("failure"); n != nil {
		if err := d.failure(n, &f.fail); err != nil {
			return err
		}
	}
	return o.done()
}

var algorithms = map[string]core.Algorithm{}

func init() {
	for a := core.TokenBucket; a <= core.LeakyQueue; a++ {
		algorithms[a.String()] = a
	}
}

func (d *decoder) policies(n *Node) ([]*policyDef, error) {
	if n.Kind != Map {
		return nil, d.err(n, "policies", "must be a map of policy names to policies, not %v", n.Kind)
	}
	var out []*policyDef
	for i, k := range n.Keys {
		path := "policies." + k.Text
		o, err := d.object(n.Vals[i], path)
		if err != nil {
			return nil, err
		}
		p := &policyDef{n: k, path: path, fields: map[string]*Node{"Name": k}}
		p.cfg.Name = k.Text
		alg := "gcra"
		var mode string
		for _, step := range []error{
			o.str("algorithm", &alg),
			o.integer("quota", 1, math.MaxInt64, &p.cfg.Quota),
			o.duration("period", &p.cfg.Period),
			o.integer("burst", 1, math.MaxInt64, &p.cfg.Burst),
			o.duration("max_delay", &p.cfg.MaxDelay),
			o.integer("max_queue", 1, math.MaxInt64, &p.cfg.MaxQueue),
			o.str("mode", &mode),
		} {
			if step != nil {
				return nil, step
			}
		}
		for field, name := range map[string]string{"Algorithm": "algorithm", "Quota": "quota", "Period": "period", "Burst": "burst", "MaxDelay": "max_delay", "MaxQueue": "max_queue"} {
			if v := o.get(name); v != nil {
				p.fields[field] = v
			}
		}
		a, ok := algorithms[alg]
		if !ok {
			return nil, d.err(o.get("algorithm"), o.field("algorithm"), "%q is none of token-bucket, gcra, leaky-bucket, fixed-window, sliding-log, sliding-counter, leaky-queue", alg)
		}
		p.cfg.Algorithm = a
		if o.get("quota") == nil || o.get("period") == nil {
			return nil, d.err(n.Vals[i], path, "needs a quota and a period")
		}
		if p.cfg.Burst == 0 && (a == core.TokenBucket || a == core.GCRA || a == core.LeakyBucket || a == core.LeakyQueue) {
			p.cfg.Burst = p.cfg.Quota // as core.PerMinute and its kin do
		}
		if p.shadow, err = d.mode(o.get("mode"), o.field("mode"), mode); err != nil {
			return nil, err
		}
		if err := o.done(); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// mode reads a policy's mode: "enforce" (the default), "shadow", or the
// percentage of keys enforced, "10%"; it returns the share in shadow.
func (d *decoder) mode(n *Node, field, s string) (float64, error) {
	switch s {
	case "", "enforce":
		return 0, nil
	case "shadow":
		return 1, nil
	}
	pct, ok := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(pct, 64)
	if !ok || err != nil || !(v >= 0 && v <= 100) {
		return 0, d.err(n, field, "must be \"enforce\", \"shadow\" or the percentage of keys enforced (\"10%%\"), got %q", s)
	}
	return 1 - v/100, nil
}

func (d *decoder) rule(n *Node, path string) (*ruleDef, error) {
	o, err := d.object(n, path)
	if err != nil {
		return nil, err
	}
	r := &ruleDef{n: n, path: path}
	for _, step := range []error{
		o.str("policy", &r.policy),
		o.strings("routes", &r.routes),
		o.str("skip", &r.skip),
	} {
		if step != nil {
			return nil, step
		}
	}
	r.polNode = o.get("policy")
	if tn := o.get("tiers"); tn != nil {
		if r.tiers, err = d.tiers(tn, o.field("tiers")); err != nil {
			return nil, err
		}
	}
	if (r.policy == "") == (r.tiers == nil) {
		return nil, d.err(n, path, "needs a policy or tiers, and not both")
	}
	kn := o.get("key")
	if kn == nil {
		return nil, d.err(n, path, "needs a key")
	}
	if r.key, err = d.key(kn, o.field("key"), 0); err != nil {
		return nil, err
	}
	if cn := o.get("cost"); cn != nil {
		if cn.Kind == Map {
			co, err := d.object(cn, o.field("cost"))
			if err != nil {
				return nil, err
			}
			if err := co.str("hook", &r.costFn); err != nil {
				return nil, err
			}
			if r.costFn == "" {
				return nil, d.err(cn, o.field("cost"), "must be a whole number or {hook: name}")
			}
			if err := co.done(); err != nil {
				return nil, err
			}
		} else if r.cost, err = d.integer(cn, o.field("cost"), 1, 1<<40); err != nil {
			return nil, err
		}
	}
	if cn := o.get("charge"); cn != nil {
		list, err := d.strings(cn, o.field("charge"))
		if err != nil {
			return nil, err
		}
		for i, s := range list {
			lo, hi, ok := statusRange(s)
			if !ok {
				return nil, d.err(cn.Items[i], fmt.Sprintf("%s[%d]", o.field("charge"), i), "must be a status (\"429\"), a class (\"4xx\") or a range (\"400-499\"), got %q", s)
			}
			r.charge = append(r.charge, [2]int{lo, hi})
		}
	}
	return r, o.done()
}

// statusRange reads "429", "4xx" or "400-499".
func statusRange(s string) (lo, hi int, ok bool) {
	if len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '9' {
		c := int(s[0]-'0') * 100
		return c, c + 99, true
	}
	a, b, isRange := strings.Cut(s, "-")
	if !isRange {
		b = a
	}
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	return lo, hi, err1 == nil && err2 == nil && lo >= 100 && hi <= 999 && lo <= hi
}

func (d *decoder) tiers(n *Node, path string) (*tierDef, error) {
	o, err := d.object(n, path)
	if err != nil {
		return nil, err
	}
	t := &tierDef{n: n}
	bn := o.get("by")
	if bn == nil {
		return nil, d.err(n, path, "needs by, the key whose value picks the policy")
	}
	if t.by, err = d.key(bn, o.field("by"), 0); err != nil {
		return nil, err
	}
	pn := o.get("policies")
	if pn == nil || pn.Kind != Map || len(pn.Keys) == 0 {
		return nil, d.err(n, o.field("policies"), "must map the values of by to policy names")
	}
	for i, k := range pn.Keys {
		v := pn.Vals[i]
		if v.Kind != String {
			return nil, d.err(v, o.field("policies")+"."+k.Text, "must be a policy name, not %v", v.Kind)
		}
		t.vals, t.names, t.nodes = append(t.vals, k.Text), append(t.names, v.Text), append(t.nodes, v)
	}
	if err := o.str("default", &t.def); err != nil {
		return nil, err
	}
	t.defN = o.get("default")
	return t, o.done()
}

// key reads a key: "client-ip", "route" or "method", or a map of one of
// by, header, user, const, hook or join, with an optional except.
func (d *decoder) key(n *Node, path string, depth int) (*keyDef, error) {
	k := &keyDef{n: n, path: path}
	if n.Kind == String {
		n = &Node{Kind: Map, Line: n.Line, Col: n.Col, Keys: []*Node{{Kind: String, Text: "by", Line: n.Line, Col: n.Col}}, Vals: []*Node{n}}
	}
	o, err := d.object(n, path)
	if err != nil {
		return nil, d.err(n, path, "must be \"client-ip\", \"route\", \"method\" or a map such as {header: X-API-Key}")
	}
	found := 0
	for _, kind := range []string{"by", "header", "user", "const", "hook", "join"} {
		v := o.get(kind)
		if v == nil {
			continue
		}
		found++
		k.kind = kind
		if kind == "join" {
			if v.Kind != List || len(v.Items) == 0 {
				return nil, d.err(v, o.field("join"), "must be a list of keys")
			}
			for i, it := range v.Items {
				part, err := d.key(it, fmt.Sprintf("%s[%d]", o.field("join"), i), depth+1)
				if err != nil {
					return nil, err
				}
				k.parts = append(k.parts, part)
			}
			continue
		}
		if v.Kind != String || v.Text == "" {
			return nil, d.err(v, o.field(kind), "must be a non-empty string")
		}
		k.arg = v.Text
		if kind == "by" {
			switch v.Text {
			case "client-ip", "route", "method":
				k.kind = v.Text
			default:
				return nil, d.err(v, path, "%q is none of client-ip, route, method", v.Text)
			}
		}
	}
	if err := o.strings("except", &k.except); err != nil {
		return nil, err
	}
	if err := o.done(); err != nil {
		return nil, err
	}
	if found != 1 {
		return nil, d.err(n, path, "must name one key: client-ip, route, method, header, user, const, hook or join")
	}
	if len(k.except) > 0 && (k.kind == "join" || k.kind == "hook") {
		return nil, d.err(o.get("except"), o.field("except"), "applies to client-ip, route, method, header, user and const keys only")
	}
	return k, nil
}

func (d *decoder) concurrency(n *Node) (*concDef, error) {
	o, err := d.object(n, "concurrency")
	if err != nil {
		return nil, err
	}
	c := &concDef{n: n}
	for _, step := range []error{
		o.smallInt("limit", 1, 1<<20, &c.limit),
		o.smallInt("per_key", 1, 1<<20, &c.perKey),
		o.smallInt("queue", 1, 1<<20, &c.q),
		o.duration("max_wait", &c.maxWait),
		o.duration("max_latency", &c.maxLatency),
	} {
		if step != nil {
			return nil, step
		}
	}
	if kn := o.get("key"); kn != nil {
		if c.key, err = d.key(kn, "concurrency.key", 0); err != nil {
			return nil, err
		}
	}
	if c.limit == 0 && c.perKey == 0 {
		return nil, d.err(n, "concurrency", "needs a limit, a per_key limit or both")
	}
	return c, o.done()
}

func (d *decoder) classes(n *Node) (*classDef, error) {
	o, err := d.object(n, "classes")
	if err != nil {
		return nil, err
	}
	c := &classDef{n: n}
	for _, step := range []error{
		o.strings("critical", &c.critical),
		o.strings("sheddable", &c.sheddable),
		o.str("hook", &c.hook),
	} {
		if step != nil {
			return nil, step
		}
	}
	if c.hook != "" && len(c.critical)+len(c.sheddable) > 0 {
		return nil, d.err(n, "classes", "has a hook and route lists: one or the other")
	}
	return c, o.done()
}

func (d *decoder) failure(n *Node, f *failDef) error {
	o, err := d.object(n, "failure")
	if err != nil {
		return err
	}
	f.n = n
	var mode string
	for _, step := range []error{
		o.str("mode", &mode),
		o.duration("retry_after", &f.retryAfter),
		o.smallInt("fallback_share", 1, 65536, &f.share),
	} {
		if step != nil {
			return step
		}
	}
	switch mode {
	case "", "open":
	case "closed":
		f.closed = true
	default:
		return d.err(o.get("mode"), "failure.mode", "must be \"open\" or \"closed\", got %q", mode)
	}
	if f.retryAfter != 0 && !f.closed {
		return d.err(o.get("retry_after"), "failure.retry_after", "applies to mode closed only")
	}
	return o.done()
}

package catalog

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// add records a problem at node n's line and column (none when n is nil).
func (p *wsParser) add(n *yaml.Node, field, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	p.problems = append(p.problems, Problem{File: p.file, Line: line, Column: col, Field: field, Message: fmt.Sprintf(format, args...)})
}

func join(field, sub string) string {
	if field == "" {
		return sub
	}
	return field + "." + sub
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

type kv struct{ k, v *yaml.Node }

// pairs returns the entries of a mapping node, reporting duplicate keys.
func (p *wsParser) pairs(n *yaml.Node, field, what string) ([]kv, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, field, "%s must be a mapping (key: value pairs), found %s", what, nodeKind(n))
		return nil, false
	}
	seen := map[string]int{}
	var out, merged []kv
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, p.mergeSources(k, v, field, what)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.add(k, join(field, k.Value), "%q is declared twice (first at line %d); remove or rename one", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, kv{k, v})
	}
	// YAML merge keys (<<: *anchor): entries of the merged mappings that
	// the mapping does not set itself; among several, the first one wins.
	for _, e := range merged {
		if _, set := seen[e.k.Value]; !set {
			seen[e.k.Value] = e.k.Line
			out = append(out, e)
		}
	}
	return out, true
}

// mergeSources returns the entries a merge key (<<) brings in: its value is
// a mapping (usually an alias, *anchor) or a list of them.
func (p *wsParser) mergeSources(k, v *yaml.Node, field, what string) []kv {
	srcs := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		srcs = v.Content
	}
	var out []kv
	for _, src := range srcs {
		if src = deref(src); src.Kind != yaml.MappingNode {
			p.add(k, join(field, "<<"), "a merge key (<<) takes a mapping or a list of them, usually an alias such as <<: *defaults")
			continue
		}
		// Each merged mapping is read once, however often it is merged
		// (directly or through other merges): nested merges of merges
		// cannot make the work grow exponentially.
		entries, done := p.merged[src]
		if !done {
			if p.merged == nil {
				p.merged = map[*yaml.Node][]kv{}
			}
			p.merged[src] = nil // a mapping that merges itself adds nothing
			entries, _ = p.pairs(src, field, what)
			p.merged[src] = entries
		}
		out = append(out, entries...)
	}
	return out
}

// misspelled says whether mapping n has a key that is a near miss of the
// field name want: that key is reported as an unknown field with "did you
// mean", so a "missing want" problem would only repeat it.
func misspelled(n *yaml.Node, want string) bool {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != want && EditDistance(strings.ToLower(k), want) < 3 {
			return true
		}
	}
	return false
}

// fields returns a mapping's values by key, reporting unknown keys.
func (p *wsParser) fields(n *yaml.Node, field, what string, allowed []string) (map[string]*yaml.Node, map[string]*yaml.Node) {
	vals := map[string]*yaml.Node{}
	keys := map[string]*yaml.Node{}
	ps, _ := p.pairs(n, field, what)
	for _, e := range ps {
		if !slices.Contains(allowed, e.k.Value) {
			p.add(e.k, join(field, e.k.Value), "unknown field %q%s (allowed: %s)", e.k.Value, suggest(e.k.Value, allowed), strings.Join(allowed, ", "))
			continue
		}
		vals[e.k.Value] = e.v
		keys[e.k.Value] = e.k
	}
	return vals, keys
}

func suggest(s string, options []string) string {
	best, bestD := "", 3
	for _, o := range options {
		if d := EditDistance(strings.ToLower(s), strings.ToLower(o)); d < bestD {
			best, bestD = o, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// nodeKind says in words what a node is, for "found ..." in problems.
func nodeKind(n *yaml.Node) string {
	n = deref(n)
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	}
	return fmt.Sprintf("%q", n.Value)
}

// lastField is the last name of a field path: "assets.a.timeout" -> "timeout".
func lastField(field string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	if i := strings.IndexByte(field, '['); i >= 0 {
		field = field[:i]
	}
	return field
}

func (p *wsParser) str(n *yaml.Node, field string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
		p.add(n, field, "expected a single value, found %s; write it as %s: VALUE", nodeKind(n), lastField(field))
		return "", false
	}
	return n.Value, true
}

func (p *wsParser) integer(n *yaml.Node, field string) (int64, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		p.add(n, field, "expected a whole number, found %s; write it as %s: 4", nodeKind(n), lastField(field))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		p.add(n, field, "%q is not a whole number; write digits only, e.g. %s: 4", n.Value, lastField(field))
		return 0, false
	}
	return v, true
}

func (p *wsParser) boolean(n *yaml.Node, field string) (bool, bool) {
	n = deref(n)
	var b bool
	if n == nil || n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.add(n, field, "expected true or false, found %s", nodeKind(n))
		return false, false
	}
	return b, true
}

func (p *wsParser) duration(n *yaml.Node, field string) (time.Duration, bool) {
	s, ok := p.str(n, field)
	if !ok {
		return 0, false
	}
	d, err := ParseDuration(s)
	if err != nil {
		p.add(n, field, "%v", err)
		return 0, false
	}
	return d, true
}

// positiveDuration is duration refusing zero: "NAME must be positive, "
// and hint (e.g. "e.g. 1h"), NAME the field's last part.
func (p *wsParser) positiveDuration(n *yaml.Node, field, hint string) (time.Duration, bool) {
	d, ok := p.duration(n, field)
	if !ok {
		return 0, false
	}
	if d == 0 {
		p.add(n, field, "%s must be positive, %s", field[strings.LastIndexByte(field, '.')+1:], hint)
		return 0, false
	}
	return d, true
}

// stringMap returns a mapping of texts, and its entries.
func (p *wsParser) stringMap(n *yaml.Node, field, what string) (map[string]string, []kv) {
	ps, _ := p.pairs(n, field, what)
	out := make(map[string]string, len(ps))
	for _, e := range ps {
		if s, ok := p.str(e.v, join(field, e.k.Value)); ok {
			out[e.k.Value] = s
		}
	}
	return out, ps
}

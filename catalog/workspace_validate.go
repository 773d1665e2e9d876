package catalog

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var (
	assetKeyRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	hhmmRe     = regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d$`)
)

var (
	topFields      = []string{"pools", "defaults", "assets"}
	poolFields     = []string{"max_concurrent_runs", "throttle"}
	defaultsFields = []string{"retries", "timeout"}
	retryFields    = []string{"max_attempts", "backoff"}
	assetFields    = []string{"group", "description", "partitions", "deps", "code_version", "pool", "freshness", "retries", "timeout", "executor"}
	schemeKinds    = []string{"hourly", "daily", "weekly", "monthly", "static", "dynamic", "multi"}
	timeFields     = []string{"start", "end", "timezone", "end_offset", "key_format"}
	depFields      = []string{"asset", "mapping"}
	freshFields    = []string{"max_lag", "by", "timezone"}
	execFields     = []string{"command", "shell", "env", "dir", "http", "demo"}
	httpFields     = []string{"url", "timeout", "token_url", "headers"}
	demoFields     = []string{"duration", "failure_rate"}
)

type wsParser struct {
	file     string
	problems []Problem
	assetAt  map[string]*yaml.Node // asset key -> its key node, for problems found after parsing
	merged   map[*yaml.Node][]kv   // entries of each mapping merged with <<, read once
}

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
		if k := n.Content[i].Value; k != want && levenshtein(strings.ToLower(k), want) < 3 {
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
		if !contains(allowed, e.k.Value) {
			p.add(e.k, join(field, e.k.Value), "unknown field %q%s (allowed: %s)", e.k.Value, suggest(e.k.Value, allowed), strings.Join(allowed, ", "))
			continue
		}
		vals[e.k.Value] = e.v
		keys[e.k.Value] = e.k
	}
	return vals, keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func suggest(s string, options []string) string {
	best, bestD := "", 3
	for _, o := range options {
		if d := levenshtein(strings.ToLower(s), strings.ToLower(o)); d < bestD {
			best, bestD = o, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
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

// ParseWorkspace parses and validates a workspace file. On failure it
// returns a *ValidationError listing every problem found.
func ParseWorkspace(filename string, data []byte) (*Workspace, error) {
	p := &wsParser{file: filename}
	w := p.parse(data)
	if len(p.problems) > 0 {
		sort.SliceStable(p.problems, func(i, j int) bool {
			a, b := p.problems[i], p.problems[j]
			return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
		})
		return nil, &ValidationError{Problems: p.problems}
	}
	return w, nil
}

func (p *wsParser) parse(data []byte) *Workspace {
	w := &Workspace{
		File:     p.file,
		Pools:    map[string]Pool{},
		Defaults: Defaults{Retries: RetryPolicy{MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff}, Timeout: DefaultTimeout},
	}
	docs, err := decodeDocuments(data)
	if err != nil {
		p.problems = append(p.problems, syntaxProblem(p.file, data, err))
		return nil
	}
	// One document: a second one (after ---) would be ignored silently.
	var root *yaml.Node
	for _, d := range docs {
		switch {
		case len(d.Content) == 0 || isNull(d.Content[0]):
			// an empty document, e.g. a trailing ---
		case root == nil:
			root = deref(d.Content[0])
		default:
			p.add(d, "", "a second YAML document starts here (after ---), and a workspace is a single document; merge its sections into the first one (one pools:, defaults: and assets:) or remove the --- line")
		}
	}
	if root == nil {
		p.add(nil, "", "the workspace file is empty; declare at least one asset under assets:")
		return nil
	}
	top, topKeys := p.fields(root, "", "the workspace", topFields)
	if n, ok := top["pools"]; ok {
		p.parsePools(w, n)
	}
	if n, ok := top["defaults"]; ok {
		p.parseDefaults(w, n)
	}
	if n, ok := top["assets"]; ok {
		p.parseAssets(w, n, topKeys["assets"])
	} else if root.Kind == yaml.MappingNode && !misspelled(root, "assets") {
		p.add(root, "assets", "missing assets section; declare at least one asset")
	}
	return w
}

func (p *wsParser) parsePools(w *Workspace, n *yaml.Node) {
	ps, _ := p.pairs(n, "pools", "pools")
	for _, e := range ps {
		name, field := e.k.Value, join("pools", e.k.Value)
		if !assetKeyRe.MatchString(name) {
			p.add(e.k, field, "pool name %q may only use letters, digits, '_', '.' and '-'", name)
			continue
		}
		pool := Pool{Name: name, Line: e.k.Line}
		if e.v.Kind == yaml.SequenceNode || isNull(e.v) {
			p.add(e.v, field, "a pool is a number of concurrent runs (%s: 4) or a mapping (%s: {max_concurrent_runs: 4, throttle: 120/h}), found %s", name, name, nodeKind(e.v))
			w.Pools[name] = pool // known, so that assets using it are not reported too
			continue
		}
		if e.v.Kind == yaml.ScalarNode {
			// shorthand: warehouse: 4
			if v, ok := p.integer(e.v, field); ok {
				pool.MaxConcurrentRuns = int(v)
				if v < 1 {
					p.add(e.v, field, "max_concurrent_runs must be at least 1")
				}
			}
		} else {
			f, _ := p.fields(e.v, field, "a pool", poolFields)
			if v, ok := f["max_concurrent_runs"]; ok {
				if x, ok := p.integer(v, join(field, "max_concurrent_runs")); ok {
					pool.MaxConcurrentRuns = int(x)
					if x < 1 {
						p.add(v, join(field, "max_concurrent_runs"), "max_concurrent_runs must be at least 1")
					}
				}
			} else if !misspelled(e.v, "max_concurrent_runs") {
				p.add(e.k, join(field, "max_concurrent_runs"), "missing max_concurrent_runs, e.g. %s: {max_concurrent_runs: 4}", name)
			}
			if v, ok := f["throttle"]; ok {
				if s, ok := p.str(v, join(field, "throttle")); ok {
					t, err := ParseThrottle(s)
					if err != nil {
						p.add(v, join(field, "throttle"), "%v", err)
					} else {
						pool.Throttle = &t
					}
				}
			}
		}
		w.Pools[name] = pool
	}
}

func (p *wsParser) parseRetries(n *yaml.Node, field string, into *RetryPolicy) {
	f, _ := p.fields(n, field, "retries", retryFields)
	if v, ok := f["max_attempts"]; ok {
		if x, ok := p.integer(v, join(field, "max_attempts")); ok {
			if x < 1 {
				p.add(v, join(field, "max_attempts"), "max_attempts counts the first attempt too; it must be at least 1")
			} else {
				into.MaxAttempts = int(x)
			}
		}
	}
	if v, ok := f["backoff"]; ok {
		if d, ok := p.duration(v, join(field, "backoff")); ok {
			into.Backoff = d
		}
	}
}

func (p *wsParser) parseDefaults(w *Workspace, n *yaml.Node) {
	f, _ := p.fields(n, "defaults", "defaults", defaultsFields)
	if v, ok := f["retries"]; ok {
		p.parseRetries(v, "defaults.retries", &w.Defaults.Retries)
	}
	if v, ok := f["timeout"]; ok {
		if d, ok := p.duration(v, "defaults.timeout"); ok {
			if d == 0 {
				p.add(v, "defaults.timeout", "timeout must be positive, e.g. 1h")
			} else {
				w.Defaults.Timeout = d
			}
		}
	}
}

type depRef struct {
	dep   Dep
	node  *yaml.Node
	field string
}

func (p *wsParser) parseAssets(w *Workspace, n *yaml.Node, key *yaml.Node) {
	ps, ok := p.pairs(n, "assets", "assets")
	if ok && len(ps) == 0 {
		p.add(key, "assets", "no assets declared; add at least one asset")
	}
	deps := map[*Asset][]depRef{}
	for _, e := range ps {
		a := p.parseAsset(w, e.k, e.v, deps)
		if a != nil {
			w.Assets = append(w.Assets, a)
		}
	}
	w.byKey = nil
	_ = w.Asset("") // build the index
	// Dependencies: unknown assets, mappings.
	keys := make([]string, len(w.Assets))
	for i, a := range w.Assets {
		keys[i] = a.Key
	}
	valid := map[string][]string{}
	for _, a := range w.Assets {
		seen := map[string]bool{}
		for _, d := range deps[a] {
			if seen[d.dep.Asset] {
				p.add(d.node, d.field, "dependency on %s is listed twice; remove one", d.dep.Asset)
				continue
			}
			seen[d.dep.Asset] = true
			up := w.Asset(d.dep.Asset)
			if up == nil {
				p.add(d.node, d.field, "dependency on unknown asset %q%s", d.dep.Asset, suggest(d.dep.Asset, keys))
				continue
			}
			valid[a.Key] = append(valid[a.Key], up.Key)
			a.Deps = append(a.Deps, d.dep)
			if a.Scheme != nil && up.Scheme != nil {
				if err := CheckMapping(ResolveMapping(d.dep.Mapping, a.Scheme, up.Scheme), a.Scheme, up.Scheme); err != nil {
					p.add(d.node, d.field, "%v", err)
				}
			}
		}
	}
	p.checkCycles(w, valid)
}

func (p *wsParser) checkCycles(w *Workspace, edges map[string][]string) {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(k string)
	visit = func(k string) {
		color[k] = grey
		stack = append(stack, k)
		for _, u := range edges[k] {
			switch color[u] {
			case white:
				visit(u)
			case grey:
				i := len(stack) - 1
				for stack[i] != u {
					i--
				}
				cycle := append(append([]string(nil), stack[i:]...), u)
				p.add(p.assetAt[k], join(join("assets", k), "deps"), "dependency cycle: %s; remove one of these dependencies", strings.Join(cycle, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		color[k] = black
	}
	for _, a := range w.Assets {
		if color[a.Key] == white {
			visit(a.Key)
		}
	}
}

func (p *wsParser) parseAsset(w *Workspace, k, v *yaml.Node, deps map[*Asset][]depRef) *Asset {
	key := k.Value
	field := join("assets", key)
	switch {
	case len(key) > MaxKeyLen:
		p.add(k, field, "asset key is longer than %d characters; shorten it", MaxKeyLen)
	case !assetKeyRe.MatchString(key):
		p.add(k, field, "asset key %q may only use letters, digits, '_', '.' and '-' (no '/', '|' or spaces), e.g. analytics.daily_events", key)
	}
	a := &Asset{Key: key, Line: k.Line, Group: DefaultGroup, Retries: w.Defaults.Retries, Timeout: w.Defaults.Timeout}
	if p.assetAt == nil {
		p.assetAt = map[string]*yaml.Node{}
	}
	p.assetAt[key] = k
	f, fk := p.fields(v, field, "an asset", assetFields)
	for _, name := range []string{"group", "description", "code_version"} {
		if n, ok := f[name]; ok {
			s, ok := p.str(n, join(field, name))
			if !ok {
				continue
			}
			switch name {
			case "group":
				if strings.TrimSpace(s) == "" {
					p.add(n, join(field, name), "group is empty; name a group (e.g. group: ingestion) or leave the field out for %q", DefaultGroup)
					continue
				}
				a.Group = s
			case "description":
				a.Description = s
			case "code_version":
				a.CodeVersion = s
			}
		}
	}
	if n, ok := f["partitions"]; ok {
		a.Scheme = p.parseScheme(n, join(field, "partitions"), fk["partitions"], true)
	} else if !misspelled(v, "partitions") {
		p.add(k, join(field, "partitions"), "missing partitions, e.g. partitions: {daily: {start: 2025-01-01}}")
	}
	if n, ok := f["pool"]; ok {
		if s, ok := p.str(n, join(field, "pool")); ok && s == "" {
			p.add(n, join(field, "pool"), "pool is empty; name a pool declared under pools: or leave the field out")
		} else if ok {
			if _, known := w.Pools[s]; !known {
				names := make([]string, 0, len(w.Pools))
				for name := range w.Pools {
					names = append(names, name)
				}
				sort.Strings(names)
				declared := "none is declared yet"
				if len(names) > 0 {
					declared = "declared: " + strings.Join(names, ", ")
				}
				p.add(n, join(field, "pool"), "unknown pool %q%s; declare it under pools: (%s)", s, suggest(s, names), declared)
			}
			a.Pool = s
		}
	}
	if n, ok := f["deps"]; ok {
		deps[a] = p.parseDeps(n, join(field, "deps"))
	}
	if n, ok := f["freshness"]; ok {
		a.Freshness = p.parseFreshness(n, join(field, "freshness"))
	}
	if n, ok := f["retries"]; ok {
		p.parseRetries(n, join(field, "retries"), &a.Retries)
	}
	if n, ok := f["timeout"]; ok {
		if d, ok := p.duration(n, join(field, "timeout")); ok {
			if d == 0 {
				p.add(n, join(field, "timeout"), "timeout must be positive, e.g. 1h")
			} else {
				a.Timeout = d
			}
		}
	}
	if n, ok := f["executor"]; ok {
		a.Executor = p.parseExecutor(n, join(field, "executor"))
	} else if !misspelled(v, "executor") {
		p.add(k, join(field, "executor"), "missing executor; add e.g. executor: {command: [python3, job.py]} or executor: {demo: {duration: 1s-5s}}")
	}
	return a
}

func (p *wsParser) parseScheme(n *yaml.Node, field string, key *yaml.Node, allowMulti bool) Scheme {
	ps, ok := p.pairs(n, field, "partitions")
	if !ok {
		return nil
	}
	if len(ps) == 0 {
		p.add(key, field, "missing partition scheme; use one of %s", strings.Join(schemeKinds, ", "))
		return nil
	}
	var kinds []string
	for _, e := range ps {
		kinds = append(kinds, e.k.Value)
		if !contains(schemeKinds, e.k.Value) {
			p.add(e.k, join(field, e.k.Value), "unknown partition scheme %q%s; use one of %s", e.k.Value, suggest(e.k.Value, schemeKinds), strings.Join(schemeKinds, ", "))
			return nil
		}
	}
	if len(ps) > 1 {
		p.add(ps[1].k, field, "more than one partition scheme (%s); declare exactly one, or combine them with multi", strings.Join(kinds, ", "))
		return nil
	}
	kind, v := Kind(ps[0].k.Value), ps[0].v
	field = join(field, string(kind))
	switch kind {
	case KindStatic:
		return p.parseStatic(v, field, ps[0].k)
	case KindDynamic:
		s, ok := p.str(v, field)
		if !ok {
			return nil
		}
		d, err := NewDynamicScheme(s)
		if err != nil {
			p.add(v, field, "%v", err)
			return nil
		}
		return d
	case KindMulti:
		if !allowMulti {
			p.add(ps[0].k, field, "multi schemes cannot be nested; a dimension is hourly, daily, weekly, monthly, static or dynamic")
			return nil
		}
		return p.parseMulti(v, field, ps[0].k)
	}
	return p.parseTime(kind, v, field, ps[0].k)
}

func (p *wsParser) parseTime(kind Kind, n *yaml.Node, field string, key *yaml.Node) Scheme {
	f, fk := p.fields(n, field, "a "+string(kind)+" scheme", timeFields)
	tp := TimeParams{Unit: kind}
	ok := true
	for _, name := range []string{"start", "end", "timezone", "key_format"} {
		if v, has := f[name]; has {
			s, good := p.str(v, join(field, name))
			ok = ok && good
			switch name {
			case "start":
				tp.Start = s
			case "end":
				tp.End = s
			case "timezone":
				tp.Timezone = s
			case "key_format":
				tp.KeyFormat = s
			}
		}
	}
	if v, has := f["end_offset"]; has {
		x, good := p.integer(v, join(field, "end_offset"))
		ok = ok && good
		tp.EndOffset = x
	}
	if !ok {
		return nil
	}
	s, err := NewTimeScheme(tp)
	if err != nil {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok { // several problems
			errs = j.Unwrap()
		}
		for _, err := range errs {
			var pe *ParamError
			at, sub := key, field
			if errors.As(err, &pe) && pe.Param != "" {
				sub = join(field, pe.Param)
				if v, has := f[pe.Param]; has {
					at = v
				} else if k, has := fk[pe.Param]; has {
					at = k
				}
				p.add(at, sub, "%s", pe.Message)
			} else {
				p.add(at, sub, "%v", err)
			}
		}
		return nil
	}
	return s
}

func (p *wsParser) parseStatic(n *yaml.Node, field string, key *yaml.Node) Scheme {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		p.add(key, field, "static partitions must be a list of keys, e.g. static: [eu, us, apac]")
		return nil
	}
	if len(n.Content) == 0 {
		p.add(key, field, "the static list is empty; list at least one key, e.g. static: [eu, us]")
		return nil
	}
	seen := map[string]int{}
	var keys []string
	ok := true
	for _, item := range n.Content {
		s, good := p.str(item, field)
		if !good {
			ok = false
			continue
		}
		if first, dup := seen[s]; dup {
			p.add(item, field, "static key %q is listed twice (first at line %d); keys must be unique", s, first)
			ok = false
			continue
		}
		seen[s] = item.Line
		if err := ValidateDynamicKey(s); err != nil {
			p.add(item, field, "static key %q: %s", s, err.(*KeyError).Reason)
			ok = false
			continue
		}
		keys = append(keys, s)
	}
	if !ok {
		return nil
	}
	s, err := NewStaticScheme(keys)
	if err != nil {
		p.add(key, field, "%v", err)
		return nil
	}
	return s
}

func (p *wsParser) parseMulti(n *yaml.Node, field string, key *yaml.Node) Scheme {
	ps, ok := p.pairs(n, field, "a multi scheme")
	if !ok {
		return nil
	}
	var dims []Dimension
	for _, e := range ps {
		s := p.parseScheme(e.v, join(field, e.k.Value), e.k, false)
		if s == nil {
			ok = false
			continue
		}
		dims = append(dims, Dimension{Name: e.k.Value, Scheme: s})
	}
	if !ok {
		return nil
	}
	m, err := NewMultiScheme(dims)
	if err != nil {
		var pe *ParamError
		at, sub := key, field
		if errors.As(err, &pe) && pe.Param != "" {
			sub = join(field, pe.Param)
			for _, e := range ps {
				if e.k.Value == pe.Param {
					at = e.k
				}
			}
		}
		msg := err.Error()
		if pe != nil {
			msg = pe.Message
		}
		p.add(at, sub, "%s", msg)
		return nil
	}
	return m
}

func (p *wsParser) parseDeps(n *yaml.Node, field string) []depRef {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, field, "deps must be a list, e.g. deps: [{asset: raw.events}]")
		return nil
	}
	var out []depRef
	for i, item := range n.Content {
		item = deref(item)
		f := fmt.Sprintf("%s[%d]", field, i)
		if item.Kind == yaml.ScalarNode {
			if s, ok := p.str(item, f); ok {
				out = append(out, depRef{Dep{Asset: s, Mapping: MappingAuto}, item, f})
			}
			continue
		}
		vals, _ := p.fields(item, f, "a dependency", depFields)
		an, ok := vals["asset"]
		if !ok {
			p.add(item, f, "missing asset, e.g. {asset: raw.events}")
			continue
		}
		s, ok := p.str(an, join(f, "asset"))
		if !ok {
			continue
		}
		d := depRef{Dep{Asset: s, Mapping: MappingAuto}, an, f}
		if mn, ok := vals["mapping"]; ok {
			if m, ok := p.str(mn, join(f, "mapping")); ok {
				switch MappingKind(m) {
				case MappingIdentity, MappingTimeWindow, MappingAll, MappingAuto:
					d.dep.Mapping = MappingKind(m)
				default:
					p.add(mn, join(f, "mapping"), "unknown mapping %q; use identity, time_window, all or auto", m)
					continue
				}
			}
		}
		out = append(out, d)
	}
	return out
}

func (p *wsParser) parseFreshness(n *yaml.Node, field string) *Freshness {
	f, _ := p.fields(n, field, "freshness", freshFields)
	fr := &Freshness{Location: time.UTC}
	if v, ok := f["max_lag"]; ok {
		if d, ok := p.duration(v, join(field, "max_lag")); ok {
			if d == 0 {
				p.add(v, join(field, "max_lag"), "max_lag must be positive, e.g. 26h")
			}
			fr.MaxLag = d
		}
	}
	if v, ok := f["by"]; ok {
		if s, ok := p.str(v, join(field, "by")); ok {
			if !hhmmRe.MatchString(s) {
				p.add(v, join(field, "by"), "by %q is not a time of day; use HH:MM, e.g. \"09:00\"", s)
			}
			fr.DeadlineHHMM = s
		}
	}
	if v, ok := f["timezone"]; ok {
		if s, ok := p.str(v, join(field, "timezone")); ok {
			loc, err := time.LoadLocation(s)
			if err != nil || s == "Local" {
				p.add(v, join(field, "timezone"), "unknown timezone %q; use an IANA name like UTC or Europe/Berlin", s)
			} else {
				fr.Location = loc
			}
		}
		if _, ok := f["by"]; !ok {
			p.add(v, join(field, "timezone"), "timezone only applies together with by: \"HH:MM\"")
		}
	}
	if _, ok := f["max_lag"]; !ok {
		if _, ok := f["by"]; !ok {
			p.add(n, field, "freshness needs max_lag (e.g. max_lag: 26h) or by (e.g. by: \"09:00\")")
		}
	}
	return fr
}

func (p *wsParser) parseExecutor(n *yaml.Node, field string) Executor {
	var ex Executor
	f, fk := p.fields(n, field, "an executor", execFields)
	var kinds []string
	for _, k := range []string{ExecutorCommand, ExecutorHTTP, ExecutorDemo} {
		if _, ok := f[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		if len(f) > 0 || deref(n).Kind == yaml.MappingNode {
			p.add(n, field, "an executor needs one of command, http or demo, e.g. executor: {command: [python3, job.py]}")
		}
		return ex
	}
	if len(kinds) > 1 {
		p.add(fk[kinds[1]], field, "an executor has exactly one of command, http or demo (found %s)", strings.Join(kinds, ", "))
		return ex
	}
	ex.Kind = kinds[0]
	if ex.Kind != ExecutorCommand {
		for _, k := range []string{"shell", "env", "dir"} {
			if _, ok := f[k]; ok {
				p.add(fk[k], join(field, k), "%s only applies to command executors; remove it", k)
			}
		}
	}
	switch ex.Kind {
	case ExecutorCommand:
		if v, ok := f["shell"]; ok {
			ex.Shell, _ = p.boolean(v, join(field, "shell"))
		}
		if v, ok := f["env"]; ok {
			var entries []kv
			ex.Env, entries = p.stringMap(v, join(field, "env"), "env")
			p.checkEnvNames(entries, join(field, "env"))
		}
		if v, ok := f["dir"]; ok {
			ex.Dir, _ = p.str(v, join(field, "dir"))
		}
		v := f["command"]
		cf := join(field, "command")
		switch {
		case v.Kind == yaml.SequenceNode:
			for _, item := range v.Content {
				if s, ok := p.str(item, cf); ok {
					ex.Command = append(ex.Command, s)
				}
			}
			if len(ex.Command) > 0 && strings.TrimSpace(ex.Command[0]) == "" {
				p.add(v, cf, "the program (the first item) is empty; give the program and its arguments, e.g. [python3, job.py]")
			} else if len(ex.Command) == 0 {
				p.add(v, cf, "command is empty; give the program and its arguments, e.g. [python3, job.py]")
			} else if ex.Shell && len(ex.Command) != 1 {
				p.add(v, cf, "with shell: true, command is a single script string, e.g. command: \"make load\"")
			}
		case v.Kind == yaml.ScalarNode && !isNull(v):
			if !ex.Shell {
				p.add(v, cf, "command must be a list of arguments (no shell), e.g. [python3, job.py]; set shell: true to run a shell script")
			}
			ex.Command = []string{v.Value}
		default:
			p.add(v, cf, "command must be a list of arguments, e.g. [python3, job.py]")
		}
	case ExecutorHTTP:
		hf := join(field, "http")
		h := &HTTPExecutor{}
		hv, hk := p.fields(f["http"], hf, "an http executor", httpFields)
		if v, ok := hv["url"]; ok {
			if s, ok := p.str(v, join(hf, "url")); ok {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					p.add(v, join(hf, "url"), "url %q must be an absolute http or https URL, e.g. https://etl.example/materialize", s)
				}
				h.URL = s
			}
		} else {
			at := fk["http"]
			if k, ok := hk["url"]; ok {
				at = k
			}
			p.add(at, join(hf, "url"), "missing url, e.g. http: {url: \"https://etl.example/materialize\"}")
		}
		if v, ok := hv["timeout"]; ok {
			if d, ok := p.duration(v, join(hf, "timeout")); ok {
				if d == 0 {
					p.add(v, join(hf, "timeout"), "timeout must be positive, e.g. 30m; leave it out to use the asset's timeout")
				}
				h.Timeout = d
			}
		}
		if v, ok := hv["token_url"]; ok {
			if s, ok := p.str(v, join(hf, "token_url")); ok {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					p.add(v, join(hf, "token_url"), "token_url %q must be an absolute http or https URL, e.g. https://auth.example/token", s)
				}
				h.TokenURL = s
			}
		}
		if v, ok := hv["headers"]; ok {
			var entries []kv
			h.Headers, entries = p.stringMap(v, join(hf, "headers"), "headers")
			p.checkHeaders(entries, join(hf, "headers"))
		}
		ex.HTTP = h
	case ExecutorDemo:
		df := join(field, "demo")
		d := &DemoExecutor{MinDuration: 200 * time.Millisecond, MaxDuration: 2 * time.Second}
		dv, _ := p.fields(f["demo"], df, "a demo executor", demoFields)
		if v, ok := dv["duration"]; ok {
			if s, ok := p.str(v, join(df, "duration")); ok {
				lo, hi, err := parseDurationRange(s)
				if err != nil {
					p.add(v, join(df, "duration"), "%v", err)
				} else {
					d.MinDuration, d.MaxDuration = lo, hi
				}
			}
		}
		if v, ok := dv["failure_rate"]; ok {
			var r float64
			if v.Kind != yaml.ScalarNode || v.Decode(&r) != nil {
				p.add(v, join(df, "failure_rate"), "failure_rate must be a number between 0 and 1, e.g. 0.05")
			} else if r < 0 || r > 1 {
				p.add(v, join(df, "failure_rate"), "failure_rate %v is outside [0, 1]; use e.g. 0.05 for 5%%", r)
			} else {
				d.FailureRate = r
			}
		}
		ex.Demo = d
	}
	return ex
}

var (
	envNameRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRe = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
)

// workEnv are the variables Tessera sets for every run of a command; an
// asset's env cannot set them (Tessera's value would win).
var workEnv = []string{"TESSERA_ASSET", "TESSERA_PARTITIONS", "TESSERA_RANGE_START", "TESSERA_RANGE_END", "TESSERA_RUN_ID",
	"TESSERA_RUN_KEY", "TESSERA_ATTEMPT", "TESSERA_IDEMPOTENCY_KEY", "TESSERA_REPORT", "TESSERA_CODE_VERSION"}

// checkEnvNames refuses env names a process environment cannot carry
// reliably, and the names Tessera sets itself.
func (p *wsParser) checkEnvNames(entries []kv, field string) {
	for _, e := range entries {
		switch name := e.k.Value; {
		case !envNameRe.MatchString(name):
			p.add(e.k, join(field, name), "environment variable name %q may only use letters, digits and '_' and must not start with a digit, e.g. DBT_TARGET", name)
		case contains(workEnv, name):
			p.add(e.k, join(field, name), "%s is set by Tessera for every run (it describes the work), so this value would never be seen; choose another name", name)
		}
	}
}

// checkHeaders refuses header names and values an HTTP request cannot carry.
func (p *wsParser) checkHeaders(entries []kv, field string) {
	for _, e := range entries {
		name := e.k.Value
		if !headerNameRe.MatchString(name) {
			p.add(e.k, join(field, name), "header name %q is not a valid HTTP header name (no spaces or ':'), e.g. X-Api-Key", name)
		}
		if strings.ContainsAny(e.v.Value, "\r\n") {
			p.add(e.v, join(field, name), "header %s spans several lines; an HTTP header value is one line", name)
		}
	}
}

// parseDurationRange parses "200ms-2s" or a single duration.
func parseDurationRange(s string) (time.Duration, time.Duration, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := ParseDuration(a)
	if err != nil {
		return 0, 0, fmt.Errorf("duration %q: %v; use a range like 200ms-2s", s, err)
	}
	if !isRange {
		return lo, lo, nil
	}
	hi, err := ParseDuration(b)
	if err != nil {
		return 0, 0, fmt.Errorf("duration %q: %v; use a range like 200ms-2s", s, err)
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("duration range %q goes backwards; put the shorter duration first, e.g. 200ms-2s", s)
	}
	return lo, hi, nil
}

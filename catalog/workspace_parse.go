package catalog

import (
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	assetKeyRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	hhmmRe     = regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d$`)
)

var (
	topFields      = []string{"pools", "defaults", "assets", "schedules", "sensors"}
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
	demoFields     = []string{"duration", "failure_rate", "fail_keys", "fail_attempts"}
)

type wsParser struct {
	file     string
	problems []Problem
	assetAt  map[string]*yaml.Node // asset key -> its key node, for problems found after parsing
	merged   map[*yaml.Node][]kv   // entries of each mapping merged with <<, read once
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
	w.topoRank = topoRanks(w)
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
	if n, ok := top["schedules"]; ok {
		p.parseSchedules(w, n)
	}
	if n, ok := top["sensors"]; ok {
		p.parseSensors(w, n)
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
		if d, ok := p.positiveDuration(v, "defaults.timeout", "e.g. 1h"); ok {
			w.Defaults.Timeout = d
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
	if n, ok := f["group"]; ok {
		var g string
		switch {
		case !p.strFields(f, field, strField{"group", &g}): // said where it is read
		case strings.TrimSpace(g) == "":
			p.add(n, join(field, "group"), "group is empty; name a group (e.g. group: ingestion) or leave the field out for %q", DefaultGroup)
		default:
			a.Group = g
		}
	}
	p.strFields(f, field, strField{"description", &a.Description}, strField{"code_version", &a.CodeVersion})
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
				names := slices.Sorted(maps.Keys(w.Pools))
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
		if d, ok := p.positiveDuration(n, join(field, "timeout"), "e.g. 1h"); ok {
			a.Timeout = d
		}
	}
	if n, ok := f["executor"]; ok {
		a.Executor = p.parseExecutor(n, join(field, "executor"))
	} else if !misspelled(v, "executor") {
		p.add(k, join(field, "executor"), "missing executor; add e.g. executor: {command: [python3, job.py]} or executor: {demo: {duration: 1s-5s}}")
	}
	return a
}

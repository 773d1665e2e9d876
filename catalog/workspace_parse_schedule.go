package catalog

import (
	"errors"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	scheduleFields = []string{"cron", "timezone", "assets", "missing_within", "chunk_size", "max_concurrent_runs", "priority", "overlap", "catchup", "enabled"}
	catchupFields  = []string{"window", "max_ticks"}
)

// parseSchedules reads the schedules section; assets are parsed already.
func (p *wsParser) parseSchedules(w *Workspace, n *yaml.Node) {
	ps, _ := p.pairs(n, "schedules", "schedules")
	seen := map[string]bool{}
	for _, e := range ps {
		name, field := e.k.Value, join("schedules", e.k.Value)
		if !assetKeyRe.MatchString(name) || len(name) > 100 {
			p.add(e.k, field, "schedule name %q may only use letters, digits, '_', '.' and '-' (at most 100)", name)
			continue
		}
		if seen[name] {
			continue // yaml.v3 refuses duplicate keys already
		}
		seen[name] = true
		if s := p.parseSchedule(w, e.k, e.v, field); s != nil {
			w.Schedules = append(w.Schedules, s)
		}
	}
}

func (p *wsParser) parseSchedule(w *Workspace, k, v *yaml.Node, field string) *Schedule {
	s := &Schedule{Name: k.Value, Line: k.Line, Overlap: OverlapSkip, Catchup: DefaultCatchup, Enabled: true}
	f, _ := p.fields(v, field, "a schedule", scheduleFields)
	ok := true
	if n, has := f["timezone"]; has {
		if tz, good := p.str(n, join(field, "timezone")); good {
			s.Timezone = tz
		} else {
			ok = false
		}
	}
	if n, has := f["cron"]; has {
		if expr, good := p.str(n, join(field, "cron")); good {
			c, err := ParseCron(expr, s.Timezone)
			var ce *CronError
			switch {
			case err == nil:
				s.Cron, s.CronExpr = c, c.String()
			case errors.As(err, &ce) && strings.HasPrefix(ce.Msg, "unknown time zone"):
				p.add(f["timezone"], join(field, "timezone"), "%s", ce.Msg)
				ok = false
			case errors.As(err, &ce) && ce.Field != "":
				p.add(n, join(field, "cron"), "the %s field %q is not valid: %s (fields: [second] minute hour day-of-month month day-of-week)", ce.Field, ce.Value, ce.Msg)
				ok = false
			default:
				msg := err.Error()
				if errors.As(err, &ce) {
					msg = ce.Msg
				}
				p.add(n, join(field, "cron"), "cron %q: %s", expr, msg)
				ok = false
			}
		} else {
			ok = false
		}
	} else if !misspelled(v, "cron") {
		p.add(k, join(field, "cron"), "missing cron, e.g. %s: {cron: \"5 * * * *\", assets: [ASSET]}", s.Name)
		ok = false
	}
	var good bool
	if s.Assets, good = p.assetList(w, k, v, f, field); !good {
		ok = false
	}
	if n, has := f["missing_within"]; has {
		if d, good := p.duration(n, join(field, "missing_within")); good {
			if d <= 0 {
				p.add(n, join(field, "missing_within"), "missing_within must be positive, e.g. 7d")
				ok = false
			}
			s.MissingWithin = d
			s.Target = TargetMissingWithin
		} else {
			ok = false
		}
	}
	if !p.scheduleTarget(w, s, f, field) {
		ok = false
	}
	if !p.scheduleLimits(s, f, field) {
		ok = false
	}
	if !ok {
		return nil
	}
	return s
}

// launchFields reads what a schedule and a sensor (fields f of field) both
// set: the chunk_size, max_concurrent_runs and priority of the backfills
// they launch, and enabled. It reports whether those were valid.
func (p *wsParser) launchFields(f map[string]*yaml.Node, field string, chunkSize, maxConcurrent, priority *int64, enabled *bool) bool {
	ok := p.boundedInt(f, field, "chunk_size", 1, MaxScheduleChunkSize, chunkSize)
	ok = p.boundedInt(f, field, "max_concurrent_runs", 1, MaxScheduleConcurrentRuns, maxConcurrent) && ok
	ok = p.boundedInt(f, field, "priority", MinPriority, MaxPriority, priority) && ok
	if n, has := f["enabled"]; has {
		if b, good := p.boolean(n, join(field, "enabled")); good {
			*enabled = b
		} else {
			ok = false
		}
	}
	return ok
}

// assetList reads the assets a schedule or sensor (key k, mapping v,
// fields f) builds: a non-empty list of declared assets, each once.
func (p *wsParser) assetList(w *Workspace, k, v *yaml.Node, f map[string]*yaml.Node, field string) ([]string, bool) {
	n, has := f["assets"]
	if !has {
		if !misspelled(deref(v), "assets") {
			p.add(k, join(field, "assets"), "missing assets: the assets it builds, e.g. assets: [%s]", firstAssetKey(w))
		}
		return nil, false
	}
	n = deref(n)
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		n = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{n}, Line: n.Line, Column: n.Column}
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.add(n, join(field, "assets"), "assets is a list of asset keys, e.g. assets: [%s]", firstAssetKey(w))
		return nil, false
	}
	keys := make([]string, len(w.Assets))
	for i, a := range w.Assets {
		keys[i] = a.Key
	}
	ok, seen := true, map[string]bool{}
	var out []string
	for i, item := range n.Content {
		key, good := p.str(item, join(field, "assets"))
		if !good {
			ok = false
			continue
		}
		switch {
		case w.Asset(key) == nil:
			p.add(item, join(field, "assets"), "unknown asset %q%s", key, suggest(key, keys))
			ok = false
		case seen[key]:
			p.add(item, join(field, "assets"), "asset %s is listed twice (item %d); remove one", key, i+1)
			ok = false
		default:
			seen[key] = true
			out = append(out, key)
		}
	}
	return out, ok
}

func firstAssetKey(w *Workspace) string {
	if len(w.Assets) > 0 {
		return w.Assets[0].Key
	}
	return "ASSET"
}

// scheduleTarget checks that the schedule's assets can be targeted the same
// way: all time-partitioned (windows closed since the previous tick, or
// missing_within), or all static/dynamic (every partition).
func (p *wsParser) scheduleTarget(w *Workspace, s *Schedule, f map[string]*yaml.Node, field string) bool {
	if len(s.Assets) == 0 {
		return true // reported already
	}
	var timed, untimed []string
	for _, key := range s.Assets {
		if _, isTime := w.Asset(key).Scheme.(TimeScheme); isTime {
			timed = append(timed, key)
		} else {
			untimed = append(untimed, key)
		}
	}
	at := f["assets"]
	switch {
	case len(timed) > 0 && len(untimed) > 0:
		p.add(at, join(field, "assets"), "assets %s are time-partitioned and %s are not: a tick targets the windows that closed for the first and every partition of the second; split them into two schedules",
			strings.Join(timed, ", "), strings.Join(untimed, ", "))
		return false
	case len(untimed) > 0 && s.Target == TargetMissingWithin:
		p.add(f["missing_within"], join(field, "missing_within"), "missing_within needs time-partitioned assets; %s are not (a tick of this schedule builds every partition of them)", strings.Join(untimed, ", "))
		return false
	case len(untimed) > 0:
		s.Target = TargetAll
		return true
	}
	// Time assets: a tick targets whole windows, so they must be windows of
	// one length in one zone.
	first := w.Asset(timed[0]).Scheme.(TimeScheme)
	for _, key := range timed[1:] {
		ts := w.Asset(key).Scheme.(TimeScheme)
		if ts.Unit() != first.Unit() || ts.Location().String() != first.Location().String() {
			p.add(at, join(field, "assets"), "assets %s (%s, %s) and %s (%s, %s) have different windows: a tick targets the windows that closed, of one length in one time zone; split them into two schedules",
				timed[0], first.Unit(), first.Location(), key, ts.Unit(), ts.Location())
			return false
		}
	}
	if s.Target == "" {
		s.Target = TargetClosedWindows
	}
	return true
}

// scheduleLimits reads chunk_size, max_concurrent_runs, priority, overlap,
// catchup and enabled.
func (p *wsParser) scheduleLimits(s *Schedule, f map[string]*yaml.Node, field string) bool {
	ok := true
	bounded := func(m map[string]*yaml.Node, prefix, name string, lo, hi int64, into *int64) {
		if !p.boundedInt(m, prefix, name, lo, hi, into) {
			ok = false
		}
	}
	if !p.launchFields(f, field, &s.ChunkSize, &s.MaxConcurrent, &s.Priority, &s.Enabled) {
		ok = false
	}
	if n, has := f["overlap"]; has {
		if v, good := p.str(n, join(field, "overlap")); !good {
			ok = false
		} else if v != OverlapSkip && v != OverlapQueue && v != OverlapAllow {
			p.add(n, join(field, "overlap"), "overlap must be skip, queue or allow, got %q (what a tick does while the previous tick's backfill still runs)", v)
			ok = false
		} else {
			s.Overlap = v
		}
	}
	if n, has := f["catchup"]; has {
		cf, _ := p.fields(n, join(field, "catchup"), "catchup", catchupFields)
		if v, has := cf["window"]; has {
			d, good := p.duration(v, join(field, "catchup.window"))
			switch {
			case !good:
				ok = false
			case d <= 0:
				p.add(v, join(field, "catchup.window"), "the catch-up window must be positive, e.g. 24h; to launch no missed tick set max_ticks: 0")
				ok = false
			default:
				s.Catchup.Window = d
			}
		}
		mt := int64(s.Catchup.MaxTicks)
		bounded(cf, join(field, "catchup"), "max_ticks", 0, 1000, &mt)
		s.Catchup.MaxTicks = int(mt)
	}
	return ok
}

// boundedInt reads the whole number m[name], if present, into into when it
// is within [lo, hi]; false when it is present and wrong (reported).
func (p *wsParser) boundedInt(m map[string]*yaml.Node, prefix, name string, lo, hi int64, into *int64) bool {
	n, has := m[name]
	if !has {
		return true
	}
	return bounded(p, n, join(prefix, name), name, p.integer, lo, hi, func(v int64) string { return strconv.FormatInt(v, 10) }, into)
}

// bounded reads the value n of field name with read into into when it is
// within [lo, hi]; false when it is wrong (reported, with the bounds as
// show writes them).
func bounded[T ~int64](p *wsParser, n *yaml.Node, field, name string, read func(*yaml.Node, string) (T, bool), lo, hi T, show func(T) string, into *T) bool {
	v, good := read(n, field)
	switch {
	case !good:
		return false
	case v < lo || v > hi:
		p.add(n, field, "%s must be between %s and %s, got %s", name, show(lo), show(hi), show(v))
		return false
	}
	*into = v
	return true
}

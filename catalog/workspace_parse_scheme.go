package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

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
		if !slices.Contains(schemeKinds, e.k.Value) {
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
		return p.built(v, field, d, err)
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
	return p.built(key, field, s, err)
}

// built is the scheme s a constructor gave, or nil when it refused with err
// (reported at n).
func (p *wsParser) built(n *yaml.Node, field string, s Scheme, err error) Scheme {
	if err != nil {
		p.add(n, field, "%v", err)
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
		if d, ok := p.positiveDuration(v, join(field, "max_lag"), "e.g. 26h"); ok {
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

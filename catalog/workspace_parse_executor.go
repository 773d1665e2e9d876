package catalog

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

func (p *wsParser) parseExecutor(n *yaml.Node, field string) Executor {
	return p.parseExecutorAs(n, field, false)
}

// parseEvaluator reads a poll sensor's evaluator: a command or an http
// endpoint, worded as such in its problems. An http evaluator takes no
// timeout (the sensor's own stops it) nor token_url (a token goes in its
// headers).
func (p *wsParser) parseEvaluator(n *yaml.Node, field string) Executor {
	ex := p.parseExecutorAs(n, field, true)
	if h := mappingValue(n, ExecutorHTTP); h != nil {
		for _, k := range []string{"timeout", "token_url"} {
			if v := mappingValue(h, k); v != nil {
				msg := "an evaluator is stopped by the sensor's own timeout (a key of the sensor, at most 1h); remove it"
				if k == "token_url" {
					msg = "an evaluator fetches no token; send one in its headers, e.g. headers: {Authorization: \"Bearer …\"}; remove it"
				}
				p.add(v, join(join(field, ExecutorHTTP), k), "%s", msg)
			}
		}
	}
	return ex
}

// mappingValue is the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func (p *wsParser) parseExecutorAs(n *yaml.Node, field string, evaluator bool) Executor {
	var ex Executor
	what := "an executor"
	if evaluator {
		what = "an evaluator"
	}
	f, fk := p.fields(n, field, what, execFields)
	var kinds []string
	for _, k := range []string{ExecutorCommand, ExecutorHTTP, ExecutorDemo} {
		if _, ok := f[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		if len(f) > 0 || deref(n).Kind == yaml.MappingNode {
			if evaluator {
				p.add(n, field, "an evaluator needs command or http, e.g. evaluator: {command: [python3, sensors/check.py]}")
			} else {
				p.add(n, field, "an executor needs one of command, http or demo, e.g. executor: {command: [python3, job.py]}")
			}
		}
		return ex
	}
	if len(kinds) > 1 {
		if evaluator {
			p.add(fk[kinds[1]], field, "an evaluator has exactly one of command or http (found %s)", strings.Join(kinds, ", "))
		} else {
			p.add(fk[kinds[1]], field, "an executor has exactly one of command, http or demo (found %s)", strings.Join(kinds, ", "))
		}
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
		p.parseCommand(&ex, f, field)
	case ExecutorHTTP:
		ex.HTTP = p.parseHTTPExecutor(f, fk, field)
	case ExecutorDemo:
		ex.Demo = p.parseDemoExecutor(f, field)
	}
	return ex
}

// parseCommand reads a command executor's fields f (command, shell, env,
// dir) into ex.
func (p *wsParser) parseCommand(ex *Executor, f map[string]*yaml.Node, field string) {
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
}

// parseHTTPExecutor reads an http executor (url, timeout, token_url,
// headers); fk are the executor's keys, where a missing url is reported.
func (p *wsParser) parseHTTPExecutor(f, fk map[string]*yaml.Node, field string) *HTTPExecutor {
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
		if d, ok := p.positiveDuration(v, join(hf, "timeout"), "e.g. 30m; leave it out to use the asset's timeout"); ok {
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
	return h
}

// parseDemoExecutor reads a demo executor (duration, failure_rate), which
// takes 200ms to 2s by default.
func (p *wsParser) parseDemoExecutor(f map[string]*yaml.Node, field string) *DemoExecutor {
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
	p.parseDemoFailKeys(d, dv, df)
	return d
}

// maxDemoFailAttempts bounds fail_attempts: a demo failure is meant to be
// retried away, not to outlast every retry for good.
const maxDemoFailAttempts = 100

// parseDemoFailKeys reads a demo executor's fail_keys and fail_attempts
// (default 1) into d.
func (p *wsParser) parseDemoFailKeys(d *DemoExecutor, dv map[string]*yaml.Node, df string) {
	kf, af := join(df, "fail_keys"), join(df, "fail_attempts")
	if v, ok := dv["fail_keys"]; ok {
		if n := deref(v); n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			p.add(v, kf, "fail_keys must be a non-empty list of partition keys, e.g. fail_keys: [wonka]")
		} else {
			for _, item := range n.Content {
				if s, ok := p.str(item, kf); ok {
					d.FailKeys = append(d.FailKeys, s)
				}
			}
		}
	}
	v, ok := dv["fail_attempts"]
	if !ok {
		if len(d.FailKeys) > 0 {
			d.FailAttempts = 1
		}
		return
	}
	if _, keys := dv["fail_keys"]; !keys {
		p.add(v, af, "fail_attempts needs fail_keys: list the partitions that fail, e.g. fail_keys: [wonka]")
		return
	}
	if n, ok := p.integer(v, af); ok {
		if n < 1 || n > maxDemoFailAttempts {
			p.add(v, af, "fail_attempts must be between 1 and %d, got %d", maxDemoFailAttempts, n)
			return
		}
		d.FailAttempts = int(n)
	}
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
		case slices.Contains(workEnv, name):
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

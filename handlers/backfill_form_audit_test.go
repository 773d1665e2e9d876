package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
)

// TestNewBackfillUnknownAsset: an asset the workspace does not declare, in
// the address or a posted form, is reported next to the assets and in the
// preview (with the closest name, and where to find the assets) instead of
// being dropped and answered with "assets is required".
func TestNewBackfillUnknownAsset(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)

	check := func(where, msg, name, suggestion string) {
		t.Helper()
		if !strings.Contains(msg, `unknown asset "`+name+`"`) {
			t.Errorf("%s: %q does not say %s is unknown", where, msg, name)
		}
		if suggestion != "" && !strings.Contains(msg, `did you mean "`+suggestion+`"`) {
			t.Errorf("%s: %q does not suggest %s", where, msg, suggestion)
		}
		if suggestion == "" && strings.Contains(msg, "did you mean") {
			t.Errorf("%s: %q suggests a name far from %s", where, msg, name)
		}
		if !strings.Contains(msg, "/api/v1/assets") || !strings.Contains(msg, "asset list") {
			t.Errorf("%s: %q does not say how to find the assets", where, msg)
		}
		if strings.Contains(msg, "required") {
			t.Errorf("%s: %q still says assets are required", where, msg)
		}
	}
	for _, tc := range []struct{ name, suggestion string }{{"nosuch.asset", ""}, {"t.dialy", "t.daily"}} {
		_, doc := pgGet(t, env, c, "/backfills/new?asset="+url.QueryEscape(tc.name)+"&start=2025-01-01&end=2025-01-03")
		check("GET field", doc.Find(`[data-testid="error-assets"]`).Text(), tc.name, tc.suggestion)
		pe := doc.Find(`[data-testid="preview-error"]`)
		check("GET preview", pe.Text(), tc.name, tc.suggestion)
		if f := pe.AttrOr("data-field", ""); f != "assets" {
			t.Errorf("GET preview error on field %q, want assets", f)
		}
		form := url.Values{"asset": {tc.name}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
		for _, path := range []string{"/backfills/preview", "/backfills"} {
			resp := env.SessionPost(t, c, path, form)
			if resp.StatusCode != 400 {
				t.Errorf("POST %s: status %d, want 400", path, resp.StatusCode)
			}
			check("POST "+path, pgDoc(t, resp).Find(`[data-testid="error-assets"]`).Text(), tc.name, tc.suggestion)
		}
	}
	// A known asset beside an unknown one: still reported, not previewed alone.
	_, doc := pgGet(t, env, c, "/backfills/new?asset=t.daily&asset=nosuch.asset&start=2025-01-01&end=2025-01-03")
	check("GET with a known asset", doc.Find(`[data-testid="preview-error"]`).Text(), "nosuch.asset", "")
	if doc.Find(`[data-testid="asset-t.daily"][checked]`).Length() != 1 {
		t.Errorf("the known asset is not ticked")
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("%d backfills created", n)
	}
}

// TestNewBackfillUnknownSelector: a selection the form does not offer, in
// the address, is reported next to the choices (with the ones there are)
// and the default is ticked and previewed; a posted one is refused with the
// same list, the default ticked.
func TestNewBackfillUnknownSelector(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	choices := []string{"range", "statuses", "gaps", "explicit"}
	listsChoices := func(where, msg string) {
		t.Helper()
		for _, v := range choices {
			if !strings.Contains(msg, v+" (") {
				t.Errorf("%s: %q does not list %s", where, msg, v)
			}
		}
	}
	ticked := func(where string, doc *goquery.Document) {
		t.Helper()
		sel := doc.Find(`input[name="selector"][checked]`)
		if sel.Length() != 1 || sel.AttrOr("value", "") != "range" {
			t.Errorf("%s: %d selections ticked (%q), want range alone", where, sel.Length(), sel.AttrOr("value", ""))
		}
	}

	_, doc := pgGet(t, env, c, "/backfills/new?selector=bogus")
	msg := doc.Find(`[data-testid="error-selector"]`).Text()
	if !strings.Contains(msg, `unknown selection "bogus"`) || !strings.Contains(msg, "Every partition in the range is ticked instead") {
		t.Errorf("GET: selector message %q", msg)
	}
	listsChoices("GET", msg)
	ticked("GET", doc)

	// With an asset, the preview is the ticked default's.
	_, doc = pgGet(t, env, c, "/backfills/new?asset=t.daily&selector=stael&start=2025-01-01&end=2025-01-03")
	if msg := doc.Find(`[data-testid="error-selector"]`).Text(); !strings.Contains(msg, `did you mean "stale"`) {
		t.Errorf("GET near a selection: %q", msg)
	}
	ticked("GET with an asset", doc)
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "3" {
		t.Errorf("GET with an asset: the preview counts %q partitions, want the range's 3 (%s)", n, doc.Find(`[data-testid="preview-error"]`).Text())
	}

	form := url.Values{"asset": {"t.daily"}, "selector": {"bogus"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	resp := env.SessionPost(t, c, "/backfills/preview", form)
	doc2 := pgDoc(t, resp)
	if resp.StatusCode != 400 {
		t.Errorf("POST: status %d", resp.StatusCode)
	}
	msg = doc2.Find(`[data-testid="error-selector"]`).Text()
	if !strings.Contains(msg, `unknown selection "bogus"`) {
		t.Errorf("POST: selector message %q", msg)
	}
	listsChoices("POST", msg)
	ticked("POST", doc2)
}

// TestNewBackfillPrefilledShowsThePreview: a /backfills/new address that
// names assets shows on load the same preview panel, error included, as
// pressing Preview on the form it renders (the live preview and the plain
// form post); two assets with "Fill gaps" showed nothing until then.
func TestNewBackfillPrefilledShowsThePreview(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	cases := []struct {
		query      string
		field, msg string // the error expected, "" when the preview counts partitions
	}{
		{"asset=t.daily&asset=t.flaky&selector=gaps", "assets", "one asset"},
		{"asset=t.daily&selector=gaps", "selector", "no watermark"},
		{"asset=t.daily&start=2025-13-45", "start", "2025-13-45"},
		{"asset=t.daily&start=2025-01-01&end=2025-01-03&chunk_size=0", "chunk_size", "0"},
		{"asset=t.daily&selector=explicit&keys=" + url.QueryEscape("2025-01-01\nnot-a-day"), "keys", "not-a-day"},
		{"asset=t.daily&start=2025-01-01&end=2025-01-03", "", ""},
	}
	for _, tc := range cases {
		_, doc := pgGet(t, env, c, "/backfills/new?"+tc.query)
		form := doc.Find(`form[data-testid="backfill-form"]`)
		onLoad := norm(doc.Find(`[data-testid="preview"]`).Text())
		if tc.msg != "" {
			pe := doc.Find(`[data-testid="preview-error"]`)
			if !strings.Contains(pe.Text(), tc.msg) || pe.AttrOr("data-field", "") != tc.field {
				t.Errorf("%s: preview error %q on %q, want %q on %s", tc.query, pe.Text(), pe.AttrOr("data-field", ""), tc.msg, tc.field)
			}
			if msg := doc.Find(`[data-testid="error-` + tc.field + `"]`).Text(); !strings.Contains(msg, tc.msg) {
				t.Errorf("%s: no message next to %s (%q)", tc.query, tc.field, msg)
			}
		} else if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "3" {
			t.Errorf("%s: preview of %q partitions, want 3", tc.query, n)
		}
		// Press Preview on the rendered form: the same panel.
		vals := url.Values{}
		form.Find("input[name]").Each(func(_ int, in *goquery.Selection) {
			if typ := in.AttrOr("type", ""); (typ == "checkbox" || typ == "radio") && in.AttrOr("checked", "-") == "-" {
				return
			}
			vals.Add(in.AttrOr("name", ""), in.AttrOr("value", ""))
		})
		vals.Set("keys", form.Find(`textarea[name="keys"]`).Text())
		_, liveDoc := pgLivePreview(t, env, c, vals)
		live := norm(liveDoc.Text())
		if live != onLoad {
			t.Errorf("%s: on load the preview says\n%s\nPreview says\n%s", tc.query, onLoad, live)
		}
		plain := pgDoc(t, env.SessionPost(t, c, "/backfills/preview", vals))
		if got := norm(plain.Find(`[data-testid="preview"]`).Text()); got != onLoad {
			t.Errorf("%s: on load the preview says\n%s\nthe posted form's says\n%s", tc.query, onLoad, got)
		}
	}
}

// TestNewBackfillDuplicateKeysNoted: repeated keys of a pasted list are
// built once, and the preview says how many lines it ignored, naming the
// keys and their lines (3 lines became 2 partitions without a word).
func TestNewBackfillDuplicateKeysNoted(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	cases := []struct {
		keys, partitions, dups string
		says                   []string
	}{
		{"2025-01-01\n2025-01-02\n\n2025-01-01", "2", "1", []string{"1 duplicate key ignored", "2025-01-01 (lines 1 and 4)"}},
		{"2025-01-03\n 2025-01-03\n2025-01-03 \n2025-01-05\n2025-01-05", "2", "3", []string{"3 duplicate keys ignored", "2025-01-03 (lines 1, 2 and 3)", "2025-01-05 (lines 4 and 5)"}},
		{"2025-01-01\n2025-01-02", "2", "", nil},
	}
	for _, tc := range cases {
		form := url.Values{"asset": {"t.daily"}, "selector": {"explicit"}, "keys": {tc.keys}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
		_, onLoad := pgGet(t, env, c, "/backfills/new?"+form.Encode())
		for where, doc := range map[string]*goquery.Document{"POST": pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form)), "GET": onLoad} {
			if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != tc.partitions {
				t.Errorf("%s %q: %q partitions, want %s (%s)", where, tc.keys, n, tc.partitions, doc.Find(`[data-testid="preview-error"]`).Text())
			}
			note := doc.Find(`[data-testid="preview-duplicates"]`)
			if got := note.AttrOr("data-n", ""); got != tc.dups {
				t.Errorf("%s %q: duplicates %q, want %q (%q)", where, tc.keys, got, tc.dups, note.Text())
			}
			for _, s := range tc.says {
				if !strings.Contains(note.Text(), s) {
					t.Errorf("%s %q: the note %q does not say %q", where, tc.keys, note.Text(), s)
				}
			}
		}
	}
}

// TestNewBackfillNumberOutOfRange: a whole number too large (or small) for
// its field gets the allowed range, not "must be a whole number", which it
// is; a value that is no number still gets that.
func TestNewBackfillNumberOutOfRange(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	base := url.Values{"asset": {"t.daily"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
	cases := []struct{ field, value, want string }{
		{"priority", "99999999999999999999", "priority must be at least -1,000 and at most 1,000, got 99999999999999999999"},
		{"priority", "-99999999999999999999", "priority must be at least -1,000 and at most 1,000, got -99999999999999999999"},
		{"chunk_size", "99999999999999999999", "chunk size must be at least 1 and at most 100,000, got 99999999999999999999"},
		{"max_concurrent_runs", "99999999999999999999", "max concurrent runs must be at least 1 and at most 10,000, got 99999999999999999999"},
		{"priority", "high", `priority must be a whole number, got "high"`},
	}
	for _, tc := range cases {
		form := url.Values{}
		for k, v := range base {
			form[k] = v
		}
		form.Set(tc.field, tc.value)
		_, onLoad := pgGet(t, env, c, "/backfills/new?"+form.Encode())
		for where, doc := range map[string]*goquery.Document{"POST": pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form)), "GET": onLoad} {
			if got := strings.TrimSpace(doc.Find(`[data-testid="error-` + tc.field + `"]`).Text()); got != tc.want {
				t.Errorf("%s %s=%s: %q, want %q", where, tc.field, tc.value, got, tc.want)
			}
		}
	}
}

// TestNewBackfillFormWords: the form's messages name its fields as the form
// labels them, never as the API or the CLI does (chunk_size, "assets is
// required", the gap search's from and --from, the Idempotency-Key header);
// the JSON API keeps its field names.
func TestNewBackfillFormWords(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	if r := env.Post(t, "/api/v1/materializations", `[{"asset":"t.daily","partition":"2025-01-01","status":"materialized"},{"asset":"t.daily","partition":"2025-01-03","status":"materialized"}]`); r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	for _, a := range []string{"t.daily", "t.flaky"} {
		if r := env.Post(t, "/api/v1/assets/"+a+"/watermark", `{"partition":"2025-01-05"}`); r.StatusCode != 200 {
			t.Fatalf("watermark %s: %d", a, r.StatusCode)
		}
	}
	apiWords := []string{"_", "selector.", "assets is required", `from "`, "a from", "--from", "From", "Idempotency-Key", "leave it out"}
	base := url.Values{"asset": {"t.daily"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
	cases := []struct {
		set       url.Values
		field     string
		say, says string // the message starts with say and holds says
	}{
		{url.Values{"chunk_size": {"0"}}, "chunk_size", "chunk size must be at least 1 and at most 100,000", ""},
		{url.Values{"chunk_size": {"200000"}}, "chunk_size", "chunk size must be at least 1 and at most 100,000", ""},
		{url.Values{"max_concurrent_runs": {"0"}}, "max_concurrent_runs", "max concurrent runs must be at least 1 and at most 10,000", ""},
		{url.Values{"max_concurrent_runs": {"20000"}}, "max_concurrent_runs", "max concurrent runs must be at least 1 and at most 10,000", ""},
		{url.Values{"asset": nil}, "assets", "tick at least one asset under Assets", ""},
		{url.Values{"selector": {"gaps"}, "start": {"nope"}}, "start", `start "nope" is not a partition of t.daily`, ""},
		{url.Values{"selector": {"gaps"}, "start": {"2025-01-09"}}, "start", "start 2025-01-09 is after the watermark", "pick a Start at or before the watermark"},
		{url.Values{"asset": {"t.flaky"}, "selector": {"gaps"}, "start": nil}, "selector", "no gaps to fill", "fill in Start"},
	}
	for _, tc := range cases {
		form := url.Values{}
		for k, v := range base {
			form[k] = v
		}
		for k, v := range tc.set {
			if v == nil {
				form.Del(k)
			} else {
				form[k] = v
			}
		}
		resp := env.SessionPost(t, c, "/backfills/preview", form)
		docs := map[string]*goquery.Document{"POST": pgDoc(t, resp)}
		if form.Get("asset") != "" {
			_, docs["GET"] = pgGet(t, env, c, "/backfills/new?"+form.Encode())
		}
		for where, doc := range docs {
			msg := strings.TrimSpace(doc.Find(`[data-testid="error-` + tc.field + `"]`).Text())
			if !strings.HasPrefix(msg, tc.say) || !strings.Contains(msg, tc.says) {
				t.Errorf("%s %v: %q, want %q … %q", where, tc.set, msg, tc.say, tc.says)
			}
			// The whole preview panel (the gap list's note included).
			panel := doc.Find(`[data-testid="preview"]`).Text()
			for _, w := range apiWords {
				if strings.Contains(msg, w) || strings.Contains(panel, w) {
					t.Errorf("%s %v: %q says %q", where, tc.set, strings.Join(strings.Fields(panel), " "), w)
				}
			}
		}
	}

	// A form launched again with other values (its page reloaded, changed):
	// said in the form's words, with a new key for the next launch.
	form := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "idempotency_key": {"bfk_words"}}
	if r := env.SessionPost(t, c, "/backfills", form); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch: %d", r.StatusCode)
	}
	form.Set("chunk_size", "2")
	resp := env.SessionPost(t, c, "/backfills", form)
	doc := pgDoc(t, resp)
	msg := doc.Find(`[data-testid="error-form"]`).Text()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(msg, "launched already") || !strings.Contains(msg, "(backfill bf_") || strings.Contains(msg, "Idempotency-Key") {
		t.Errorf("relaunch: %d %q", resp.StatusCode, msg)
	}
	if k := doc.Find(`[data-testid="idempotency-key"]`).AttrOr("value", ""); k == "bfk_words" || k == "" {
		t.Errorf("relaunch: the key stays %q", k)
	}
	if n := pgCountBackfills(t, env); n != 1 {
		t.Errorf("%d backfills", n)
	}

	// The JSON API keeps its field names.
	for body, want := range map[string]string{
		`{"assets":["t.daily"],"selector":{"type":"range"},"chunk_size":0}`: "chunk_size must be between",
		`{"assets":[],"selector":{"type":"range"}}`:                         "assets is required",
	} {
		r := env.Post(t, "/api/v1/backfills/preview", body)
		b := readBody(t, r)
		if r.StatusCode != 400 || !strings.Contains(b, want) {
			t.Errorf("API %s: %d %s", body, r.StatusCode, b)
		}
	}
}

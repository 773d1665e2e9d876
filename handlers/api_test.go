package handlers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

type apiError struct {
	Error struct {
		Code, Message, Field string
	} `json:"error"`
}

func countRows(t *testing.T, env *testkit.Env) (events, instances, statuses int) {
	t.Helper()
	return env.Count(t, `SELECT COUNT(*) FROM events`), env.Count(t, `SELECT COUNT(*) FROM partition_instances_all`), env.Count(t, `SELECT COUNT(*) FROM partition_status_all`)
}

func TestReportMaterializationsBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	ok := `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized"}`
	cases := []struct {
		name, body, field, msg string
	}{
		{"empty body", ``, "", "empty"},
		{"malformed json", `{"asset":`, "", "not valid"},
		{"not an object", `42`, "", "JSON object or array"},
		{"unknown field", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","colour":"red"}`, "colour", "unknown field \"colour\"; the fields there are asset, partition"},
		{"wrong type in a bare batch", `[{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized"},{"asset":"raw.events","partition":7,"status":"materialized"}]`, "materializations[1].partition", "materializations[1].partition must be a string, not a JSON number"},
		{"unknown field in a batch", `{"materializations":[{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized"},{"asset":"raw.events","partition":"2025-01-01-01:00","status":"materialized","rows":3}]}`, "materializations[1].rows", "the fields there are asset, partition"},
		{"unknown asset", `[` + ok + `,{"asset":"nope","partition":"x","status":"materialized"}]`, "materializations[1].asset", `item 1 (asset "nope"`},
		{"key outside scheme", `[` + ok + `,{"asset":"raw.events","partition":"2025-01-01","status":"materialized"}]`, "materializations[1].partition", "2025-01-01"},
		{"key before start", `{"asset":"raw.events","partition":"2024-12-31-23:00","status":"materialized"}`, "materializations[0].partition", "2024-12-31-23:00"},
		{"static key not listed", `{"asset":"crm.accounts_snapshot","partition":"evil","status":"materialized"}`, "materializations[0].partition", "evil"},
		{"dynamic key not added", `{"asset":"partners.feeds","partition":"new-partner","status":"materialized"}`, "materializations[0].partition", "new-partner"},
		{"bad status", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"done"}`, "materializations[0].status", `"done"`},
		{"bad time", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"failed","at":"yesterday"}`, "materializations[0].at", "RFC 3339"},
		{"metadata not object", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","metadata":[1]}`, "materializations[0].metadata", "JSON object"},
		{"wrong type", `{"asset":"raw.events","partition":5,"status":"materialized"}`, "partition", "partition must be a string, not a JSON number"},
		{"empty list", `[]`, "materializations", "no materializations"},
		{"bad started_at", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","started_at":"an hour ago"}`, "materializations[0].started_at", "RFC 3339"},
		{"started_at after at", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","at":"2025-01-01T02:00:00Z","started_at":"2025-01-01T03:00:00Z"}`, "materializations[0].started_at", "after at 2025-01-01T02:00:00Z"},
		// code_version and run_id are shown in the CLI's tables: an escape
		// sequence would reach other users' terminals, a huge one fill them.
		{"code_version with a control character", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","code_version":"v\u001b[31m3"}`, "materializations[0].code_version", "code_version holds a control character (U+001B at byte 1)"},
		{"code_version with a line break", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","code_version":"v3\nv4"}`, "materializations[0].code_version", "control character (U+000A at byte 2)"},
		{"code_version too long", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","code_version":"` + strings.Repeat("v", 201) + `"}`, "materializations[0].code_version", "code_version must be at most 200 characters (got 201)"},
		{"run_id with a control character", `{"asset":"raw.events","partition":"2025-01-01-00:00","status":"materialized","run_id":"r\u001b]0;x\u0007"}`, "materializations[0].run_id", "run_id holds a control character (U+001B at byte 1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e0, i0, s0 := countRows(t, env)
			resp := env.Post(t, "/api/v1/materializations", tc.body)
			var body apiError
			decode(t, resp, &body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, body %+v", resp.StatusCode, body)
			}
			if body.Error.Field != tc.field || !strings.Contains(body.Error.Message, tc.msg) {
				t.Fatalf("error %+v, want field %q and message containing %q", body.Error, tc.field, tc.msg)
			}
			if e1, i1, s1 := countRows(t, env); e1 != e0 || i1 != i0 || s1 != s0 {
				t.Fatalf("rows written: events %d→%d instances %d→%d statuses %d→%d", e0, e1, i0, i1, s0, s1)
			}
		})
	}
}

func TestReportMaterializationsAndListPartitions(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	body := `{"materializations":[
		{"asset":"crm.accounts_snapshot","partition":"acme","status":"materialized","code_version":"v9","metadata":{"rows":3}},
		{"asset":"crm.accounts_snapshot","partition":"globex","status":"failed","error":"boom"},
		{"asset":"ml.features","partition":"2025-01-02|eu","status":"materialized"}]}`
	resp := env.Post(t, "/api/v1/materializations", body)
	var res struct {
		Recorded    int      `json:"recorded"`
		InstanceIDs []string `json:"instance_ids"`
	}
	decode(t, resp, &res)
	if resp.StatusCode != http.StatusCreated || res.Recorded != 3 || len(res.InstanceIDs) != 3 {
		t.Fatalf("report: %d %+v", resp.StatusCode, res)
	}
	// Walk every partition of the static asset two at a time.
	var keys, statuses []string
	cursor := ""
	for page := 0; page < 10; page++ {
		r, err := env.Get("/api/v1/assets/crm.accounts_snapshot/partitions?limit=2&cursor=" + cursor)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Partitions []struct {
				Partition, Status   string
				LastMaterialization *struct {
					CodeVersion string          `json:"code_version"`
					Metadata    json.RawMessage `json:"metadata"`
				} `json:"last_materialization"`
			}
			NextCursor string `json:"next_cursor"`
		}
		decode(t, r, &out)
		for _, p := range out.Partitions {
			keys = append(keys, p.Partition)
			statuses = append(statuses, p.Status)
			if p.Partition == "acme" && (p.LastMaterialization == nil || p.LastMaterialization.CodeVersion != "v9" || string(p.LastMaterialization.Metadata) != `{"rows":3}`) {
				t.Fatalf("acme: %+v", p)
			}
		}
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(keys, ",") != "acme,globex,initech,umbrella,hooli,stark,wayne,wonka" {
		t.Fatalf("keys %v", keys)
	}
	if statuses[0] != "materialized" || statuses[1] != "failed" || statuses[2] != "missing" {
		t.Fatalf("statuses %v", statuses)
	}
	// Status filters: missing only, and failed+materialized.
	r, _ := env.Get("/api/v1/assets/crm.accounts_snapshot/partitions?status=missing&limit=100")
	var miss struct{ Partitions []struct{ Partition string } }
	decode(t, r, &miss)
	if len(miss.Partitions) != 6 || miss.Partitions[0].Partition != "initech" {
		t.Fatalf("missing: %+v", miss)
	}
	r, _ = env.Get("/api/v1/assets/crm.accounts_snapshot/partitions?status=failed,materialized")
	var done struct{ Partitions []struct{ Partition string } }
	decode(t, r, &done)
	if len(done.Partitions) != 2 {
		t.Fatalf("failed,materialized: %+v", done)
	}
	// Assets list carries the counts.
	r, _ = env.Get("/api/v1/assets")
	var assets struct {
		Assets []struct {
			Key    string
			Counts map[string]int64
			Total  int64 `json:"total_partitions"`
		}
	}
	decode(t, r, &assets)
	for _, a := range assets.Assets {
		if a.Key == "crm.accounts_snapshot" && (a.Counts["materialized"] != 1 || a.Counts["failed"] != 1 || a.Counts["missing"] != 6 || a.Total != 8) {
			t.Fatalf("counts %+v", a)
		}
	}
}

func TestListPartitionsBadInput(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	cases := map[string]int{
		"/api/v1/assets/nope/partitions":                     404,
		"/api/v1/assets/raw.events/partitions?limit=0":       400,
		"/api/v1/assets/raw.events/partitions?limit=5000":    400,
		"/api/v1/assets/raw.events/partitions?limit=ten":     400,
		"/api/v1/assets/raw.events/partitions?cursor=zzz":    400,
		"/api/v1/assets/raw.events/partitions?status=stale!": 400,
		"/api/v1/nothing-here":                               404,
	}
	for path, want := range cases {
		r, err := env.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		var body apiError
		decode(t, r, &body)
		if r.StatusCode != want || body.Error.Message == "" {
			t.Fatalf("GET %s: %d %+v, want %d with a message", path, r.StatusCode, body, want)
		}
	}
}

func TestDynamicPartitionKeys(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	resp := env.Post(t, "/api/v1/assets/partners.feeds/partition-keys", `{"keys":["p-1","p-2","p-1"]}`)
	var out struct{ Added int }
	decode(t, resp, &out)
	if resp.StatusCode != 200 || out.Added != 2 {
		t.Fatalf("add keys: %d %+v", resp.StatusCode, out)
	}
	if r := env.Post(t, "/api/v1/materializations", `{"asset":"partners.feeds","partition":"p-2","status":"materialized"}`); r.StatusCode != 201 {
		t.Fatalf("report on a new dynamic key: %d", r.StatusCode)
	}
	for body, field := range map[string]string{
		// A bad key is named by its place, as in every other key list.
		`{"keys":["bad|key"]}`:       "keys[0]",
		`{"keys":["p-3","bad|key"]}`: "keys[1]",
		`{"keys":[]}`:                "keys",
		`{"kees":["x"]}`:             "kees",
	} {
		r := env.Post(t, "/api/v1/assets/partners.feeds/partition-keys", body)
		var e apiError
		decode(t, r, &e)
		if r.StatusCode != 400 || e.Error.Field != field {
			t.Fatalf("%s: %d %+v", body, r.StatusCode, e)
		}
	}
	if r := env.Post(t, "/api/v1/assets/raw.events/partition-keys", `{"keys":["x"]}`); r.StatusCode != 400 {
		t.Fatalf("keys for a time-partitioned asset: %d", r.StatusCode)
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	for _, p := range []string{"/healthz", "/readyz"} {
		r, err := env.Get(p)
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, r, err)
		}
	}
	// Read the page to its end: the request is counted once the handler returns.
	if r, err := env.Get("/assets/raw.events"); err == nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	// Invented methods share one label value: a client cannot add series.
	for _, m := range []string{"XMETH1", "XMETH2"} {
		req, _ := http.NewRequest(m, env.URL+"/", nil)
		if r, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}
	_, b := env.GetBody(t, "/metrics")
	for _, want := range []string{`tessera_http_requests_total{code="200",method="GET",route="/assets/:key"}`, "go_sql_open_connections", "tessera_http_request_duration_seconds",
		`method="other"`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(b), "XMETH") {
		t.Fatal("an invented method became a metrics label value")
	}
	env.Store.Close()
	r, _ := env.Get("/readyz")
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with a closed database: %d", r.StatusCode)
	}
}

// A pipeline may report when it started building a partition (started_at):
// the instance keeps it, and a backfill preview of an asset that has no run
// yet estimates from those durations, as README says.
func TestReportMaterializationsStartedAt(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.StartEngine(t, jobs.Options{})
	resp := env.Post(t, "/api/v1/materializations", `[
		{"asset":"crm.accounts_snapshot","partition":"acme","status":"materialized","started_at":"2025-02-04T00:50:00Z","at":"2025-02-04T01:00:00Z"},
		{"asset":"crm.accounts_snapshot","partition":"globex","status":"materialized","started_at":"2025-02-04T00:40:00.5Z","at":"2025-02-04T01:00:00Z"}]`)
	var res map[string]any
	decode(t, resp, &res)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("report: %d %v", resp.StatusCode, res)
	}
	r, err := env.Get("/api/v1/assets/crm.accounts_snapshot/partitions/globex/history")
	if err != nil {
		t.Fatal(err)
	}
	var hist struct {
		Instances []struct {
			StartedAt  string `json:"started_at"`
			FinishedAt string `json:"finished_at"`
		} `json:"instances"`
	}
	decode(t, r, &hist)
	if len(hist.Instances) != 1 || hist.Instances[0].StartedAt != "2025-02-04T00:40:00.500Z" || hist.Instances[0].FinishedAt != "2025-02-04T01:00:00.000Z" {
		t.Fatalf("history %+v", hist)
	}
	pr := env.Post(t, "/api/v1/backfills/preview", `{"assets":["crm.accounts_snapshot"],"selector":{"type":"explicit","keys":["acme","globex","initech"]}}`)
	var pv map[string]any
	decode(t, pr, &pv)
	if pr.StatusCode != http.StatusOK || pv["estimated_seconds"] == nil || !strings.Contains(fmt.Sprint(pv["estimate"]), "reported materializations") {
		t.Fatalf("preview %d %v", pr.StatusCode, pv)
	}
}

package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestAssetPartitionsTableShowsLastAttempt: the partitions table shows, for
// a failed partition, when its last attempt ran, in which run and its error
// (cut to 60 characters); for a materialized one, when, in which run and
// the code version; a partition that failed after it was materialized also
// shows when its data was built. --json is as the API answers.
func TestAssetPartitionsTableShowsLastAttempt(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		// A backfill run that fails (t.flaky fails every attempt, 1 attempt).
		if code, out, errOut := s.cli(t, "backfill", "create", "t.flaky", "--partition", "2025-03-01", "--wait"); code != 1 {
			t.Fatalf("failing backfill: %d %q %q", code, out, errOut)
		}
		// Reports: built; built then failed with a long error; failed.
		long := "source file missing: s3://bucket/raw/events/2025-01-02/part-0000.parquet after 3 tries (permission denied)"
		for _, args := range [][]string{
			{"report", "t.daily", "2025-01-01", "--run-id", "ext-ok"},
			{"report", "t.daily", "2025-01-02", "--run-id", "ext-ok2"},
			{"report", "t.daily", "2025-01-02", "--status", "failed", "--error", long, "--run-id", "ext-bad2"},
			{"report", "t.daily", "2025-01-03", "--status", "failed", "--error", "source\nmissing", "--run-id", "ext-bad3"},
		} {
			if code, out, errOut := s.cli(t, args...); code != 0 {
				t.Fatalf("%v: %d %q %q", args, code, out, errOut)
			}
		}

		code, out, errOut := s.cli(t, "asset", "partitions", "t.flaky", "--status", "failed", "--json")
		var flaky struct {
			Partitions []struct {
				LastAttempt struct {
					RunID string `json:"run_id"`
				} `json:"last_attempt"`
			}
		}
		if code != 0 || json.Unmarshal([]byte(out), &flaky) != nil || len(flaky.Partitions) != 1 || flaky.Partitions[0].LastAttempt.RunID == "" {
			t.Fatalf("partitions --json: %d %q %q", code, out, errOut)
		}
		runID := flaky.Partitions[0].LastAttempt.RunID
		code, out, errOut = s.cli(t, "asset", "partitions", "t.flaky", "--status", "failed")
		const when = `\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`
		if code != 0 || !regexp.MustCompile(`(?m)^PARTITION\s+STATUS\s+LAST ATTEMPT \(UTC\)\s+RUN\s+CODE\s+ERROR$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^2025-03-01\s+failed\s+`+when+`\s+`+runID+`\s+-\s+demo: simulated failure$`).MatchString(out) {
			t.Fatalf("failed partitions of a backfill run: %d %q %q", code, out, errOut)
		}

		code, out, errOut = s.cli(t, "asset", "partitions", "t.daily", "--limit", "4")
		cutErr := regexp.QuoteMeta(long[:59]) + "…"
		for _, re := range []string{
			`(?m)^PARTITION\s+STATUS\s+LAST ATTEMPT \(UTC\)\s+RUN\s+MATERIALIZED \(UTC\)\s+CODE\s+ERROR$`,
			`(?m)^2025-01-01\s+fresh\s+` + when + `\s+ext-ok\s+-\s+v1$`,
			// Its data is still there: fresh, not failed, as the health bars count it.
			`(?m)^2025-01-02\s+fresh, last attempt failed\s+` + when + `\s+ext-bad2\s+` + when + `\s+v1\s+` + cutErr + `$`,
			`(?m)^2025-01-03\s+failed\s+` + when + `\s+ext-bad3\s+-\s+-\s+source missing$`,
			`(?m)^2025-01-04\s+missing\s+-\s+-\s+-\s+-$`,
			`(?m)^\(errors cut at 60 characters; --json has them whole\)$`,
		} {
			if code != 0 || !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("partitions table lacks %s: %d\n%s%s", re, code, out, errOut)
			}
		}
		// Materialized partitions only: no column for older data, nothing cut.
		code, out, _ = s.cli(t, "asset", "partitions", "t.daily", "--status", "materialized")
		if code != 0 || !regexp.MustCompile(`(?m)^PARTITION\s+STATUS\s+LAST ATTEMPT \(UTC\)\s+RUN\s+CODE\s+ERROR\n2025-01-01\s+fresh\s+`+when+`\s+ext-ok\s+v1\n$`).MatchString(out) {
			t.Errorf("materialized partitions: %d\n%s", code, out)
		}
		// --json keeps the whole error.
		code, out, _ = s.cli(t, "asset", "partitions", "t.daily", "--status", "failed", "--json")
		if code != 0 || !strings.Contains(out, `"error": "`+long+`"`) || !strings.Contains(out, `"last_materialization": null`) {
			t.Errorf("partitions --json: %d %s", code, out)
		}
	})
}

// TestEmptyListsSaySo: a filter that matches nothing printed the table's
// header alone (`asset partitions --status failed`, `backfill chunks
// --state failed`), and `asset partitions --json` answered "partitions":
// null; now a line says nothing matched (or nothing is there yet), and
// --json has [] as the API does.
func TestEmptyListsSaySo(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.regions:
    partitions: {static: [eu, us]}
    executor: {demo: {duration: 1ms}}
  t.feeds:
    partitions: {dynamic: feeds}
    executor: {demo: {duration: 1ms}}
`)
	code, out, errOut := s.cli(t, "backfill", "create", "t.regions", "--partitions", "eu,us", "--wait", "--json")
	var b struct {
		ID string `json:"id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.ID == "" {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"asset", "partitions", "t.regions", "--status", "failed"}, "no partitions of t.regions match --status failed\n"},
		{[]string{"asset", "partitions", "t.feeds"}, "t.feeds has no partitions yet\n"},
		{[]string{"backfill", "chunks", b.ID, "--state", "failed"}, "no chunk runs match --state failed\n"},
	} {
		if code, out, errOut := s.cli(t, c.args...); code != 0 || out != c.want {
			t.Errorf("%v: %d %q %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
	code, out, errOut = s.cli(t, "asset", "partitions", "t.regions", "--status", "failed", "--json")
	var p map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("partitions --json: %d %q %q", code, out, errOut)
	}
	if l, ok := p["partitions"].([]any); !ok || len(l) != 0 {
		t.Errorf("partitions --json of none: %s, want \"partitions\": []", out)
	}
}

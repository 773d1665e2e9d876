package cli_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/testkit"
)

// apiEventCount walks GET /api/v1/backfills/{id}/events to its end.
func apiEventCount(t *testing.T, s server, id string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		_, b := testkit.Fetch(t, http.DefaultClient, http.MethodGet, s.URL+"/api/v1/backfills/"+id+"/events?limit=1000&cursor="+url.QueryEscape(cursor), s.Token)
		var page struct {
			Events     []json.RawMessage `json:"events"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(b), &page); err != nil {
			t.Fatal(err)
		}
		n += len(page.Events)
		if cursor = page.NextCursor; cursor == "" {
			return n
		}
	}
}

var eventRowRe = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ `)

// TestBackfillEventsLimitAndAll: `backfill events` shows the newest 100
// events and, when there are more, says how many it showed and how to see
// the rest (it used to stop at 100 silently); --limit N shows N, across
// the API's pages of 1,000; --all follows next_cursor to the oldest event.
func TestBackfillEventsLimitAndAll(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		// One chunk at a time: three events per chunk, over 1,000 in all.
		code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-12-31", "--concurrency", "1", "--wait")
		if code != 0 {
			t.Fatalf("create --wait: %d %q %q", code, out, errOut)
		}
		id := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
		total := apiEventCount(t, s, id)
		if total <= 1000 {
			t.Fatalf("the backfill has %d events; the test needs more than one API page", total)
		}
		const more = "older ones left out: --limit N shows more, --all shows every event"

		code, out, errOut = s.cli(t, "backfill", "events", id)
		if code != 0 || len(eventRowRe.FindAllString(out, -1)) != 100 || !strings.HasSuffix(out, "(the newest 100 events; "+more+")\n") {
			t.Fatalf("events: %d %q %q", code, out, errOut)
		}
		code, out, errOut = s.cli(t, "backfill", "events", id, "--limit", "5")
		if code != 0 || len(eventRowRe.FindAllString(out, -1)) != 5 || !strings.Contains(out, "(the newest 5 events; "+more+")") {
			t.Fatalf("events --limit 5: %d %q %q", code, out, errOut)
		}
		// More than one page of the API.
		code, out, errOut = s.cli(t, "backfill", "events", id, "--limit", "1001")
		if code != 0 || len(eventRowRe.FindAllString(out, -1)) != 1001 || (total > 1001) != strings.Contains(out, "(the newest 1001 events; ") {
			t.Fatalf("events --limit 1001 of %d: exit %d, %d rows, %q", total, code, len(eventRowRe.FindAllString(out, -1)), errOut)
		}
		code, out, errOut = s.cli(t, "backfill", "events", id, "--all")
		if code != 0 || len(eventRowRe.FindAllString(out, -1)) != total || strings.Contains(out, "left out") ||
			!strings.Contains(out, "backfill.created") {
			t.Fatalf("events --all of %d: exit %d, %d rows, %q", total, code, len(eventRowRe.FindAllString(out, -1)), errOut)
		}
		var page struct {
			Events     []map[string]any `json:"events"`
			NextCursor string           `json:"next_cursor"`
		}
		code, out, _ = s.cli(t, "backfill", "events", id, "--all", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Events) != total || page.NextCursor != "" {
			t.Fatalf("events --all --json: exit %d, %d events of %d, next_cursor %q", code, len(page.Events), total, page.NextCursor)
		}
		page.Events, page.NextCursor = nil, ""
		code, out, _ = s.cli(t, "backfill", "events", id, "--limit", "3", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Events) != 3 || page.NextCursor == "" {
			t.Fatalf("events --limit 3 --json: %d %q", code, out)
		}

		// A short timeline: everything, and no note.
		code, out, errOut = s.cli(t, "backfill", "create", "t.one", "--partitions", "only", "--wait")
		if code != 0 {
			t.Fatalf("create t.one: %d %q %q", code, out, errOut)
		}
		small := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
		code, out, errOut = s.cli(t, "backfill", "events", small)
		if code != 0 || len(eventRowRe.FindAllString(out, -1)) != apiEventCount(t, s, small) || strings.Contains(out, "left out") {
			t.Fatalf("events of a short timeline: %d %q %q", code, out, errOut)
		}

		for _, tc := range []struct {
			args []string
			msg  string
		}{
			{[]string{"--limit", "0"}, "--limit must be 1 or more"},
			{[]string{"--limit", "5", "--all"}, "--limit and --all"},
		} {
			code, _, errOut := s.cli(t, append([]string{"backfill", "events", id}, tc.args...)...)
			if code != cli.ExitUsage || !strings.Contains(errOut, tc.msg) {
				t.Errorf("events %v: exit %d %q, want 2 with %q", tc.args, code, errOut, tc.msg)
			}
		}
	})
}

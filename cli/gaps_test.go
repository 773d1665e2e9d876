package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

func TestGapsCommand(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	env := testkit.WithAssets(t,
		testkit.Asset("g.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "executor: {demo: {duration: 1s}}"),
		testkit.Asset("g.other", "{static: [a, b]}", "executor: {demo: {duration: 1s}}"),
	)
	tok := env.AdminToken()
	a := env.WS.Asset("g.daily")
	sp := a.Scheme.Space(time.Now(), nil)
	var items []db.Materialization
	for _, k := range []string{"2025-01-03", "2025-01-04", "2025-01-07", "2025-01-10"} {
		i, _ := sp.Index(k)
		items = append(items, db.Materialization{AssetID: env.WS.IDs["g.daily"], AssetKey: "g.daily", Partition: k, Idx: i,
			Status: db.StatusMaterialized, RunID: "r-" + k, Source: "test", At: time.Now()})
	}
	if _, err := env.Store.RecordMaterializations(context.Background(), items, "test", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	gaps := func(args ...string) (int, string, string) {
		return run(t, append(append([]string{"gaps"}, args...), "--server", env.URL, "--token", tok)...)
	}

	code, out, errOut := gaps("g.daily")
	if code != 0 || !strings.Contains(out, "skipped") || !strings.Contains(errOut, "no watermark") || !strings.Contains(errOut, "/api/v1/assets/g.daily/watermark") {
		t.Fatalf("no watermark: exit %d %q %q", code, out, errOut)
	}
	env.Post(t, "/api/v1/assets/g.daily/watermark", `{"partition":"2025-01-09"}`)
	code, out, _ = gaps("g.daily")
	if code != 0 || !strings.Contains(out, "2025-01-05  2025-01-06  2") || !strings.Contains(out, "2025-01-08  2025-01-09  2") ||
		!strings.Contains(out, "4 missing partitions in 2 ranges") {
		t.Fatalf("catch-up: exit %d\n%s", code, out)
	}
	code, out, _ = gaps("g.daily", "--from", "2025-01-01", "--json")
	var g struct {
		Total  int64
		Ranges []struct{ Start, End string }
	}
	// Never past the watermark: nothing after 2025-01-09 although 01-11… are missing.
	if err := json.Unmarshal([]byte(out), &g); code != 0 || err != nil || g.Total != 6 || g.Ranges[0].Start != "2025-01-01" || g.Ranges[len(g.Ranges)-1].End != "2025-01-09" {
		t.Fatalf("--from --json: exit %d %v %s", code, err, out)
	}
	// Several assets: the one without a watermark is skipped with a warning.
	code, out, errOut = gaps("g.daily", "g.other")
	if code != 0 || !strings.Contains(out, "4 missing partitions in 2 ranges") || !strings.Contains(out, "g.other: skipped (no watermark)") ||
		!strings.Contains(errOut, "asset g.other has no watermark") {
		t.Fatalf("two assets: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = gaps("g.daily", "--from", "2025-01-20")
	if code != 2 || !strings.Contains(errOut, "after the watermark 2025-01-09") {
		t.Fatalf("--from after the watermark: exit %d %q", code, errOut)
	}
	code, _, errOut = run(t, "gaps", "g.daily", "--server", env.URL, "--token", "tsr_"+strings.Repeat("A", 43))
	if code != 3 {
		t.Fatalf("bad token: exit %d %q", code, errOut)
	}
	if code, _, _ = run(t, "gaps"); code != 2 {
		t.Fatalf("no asset: exit %d", code)
	}
}

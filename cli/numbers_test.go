package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestPreviewPrintsWholeCounts: a preview of a million partitions prints
// its counts as integers with thousands separators ("1,000,000", where it
// printed "1e+06"), and its first chunk of 8,760 keys, of which the server
// lists 1,000, says which part the line shows ("first 8 of 8,760"); --json
// carries the chunk's size beside its cut key list.
func TestPreviewPrintsWholeCounts(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServerWith(t, `
assets:
  big.hourly:
    partitions: {hourly: {start: "1900-01-01-00:00"}}
    executor: {demo: {duration: 1ms}}
`)
	args := []string{"backfill", "preview", "big.hourly", "--start", "1900-01-01-00:00", "--end", "2014-01-29-15:00", "--chunk-size", "8760"}
	code, out, errOut := s.cli(t, args...)
	if code != 0 {
		t.Fatalf("preview: %d %q %q", code, out, errOut)
	}
	if strings.Contains(out, "e+") {
		t.Errorf("preview prints a count in exponent notation:\n%s", out)
	}
	for _, want := range []string{
		`(?m)^partitions\s+1,000,000$`,
		`(?m)^chunks \(runs\)\s+115$`,
		`(?m)^current status\s+0 materialized \(0 of them stale\), 0 failed, 0 in progress, 1,000,000 missing$`,
		`(?m)^first chunk\s+big\.hourly: 1900-01-01-00:00, 1900-01-01-01:00, .*, 1900-01-01-07:00 … \(first 8 of 8,760\)$`,
		`(?m)^skipped\s+0$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("preview lacks %s:\n%s", want, out)
		}
	}
	code, out, _ = s.cli(t, append(args, "--json")...)
	var pv struct {
		FirstChunk struct {
			Partitions int64    `json:"partitions"`
			Keys       []string `json:"keys"`
		} `json:"first_chunk"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &pv) != nil || pv.FirstChunk.Partitions != 8760 || len(pv.FirstChunk.Keys) != 1000 {
		t.Errorf("preview --json: %d, first chunk of %d partitions with %d keys, want 8,760 and 1,000", code, pv.FirstChunk.Partitions, len(pv.FirstChunk.Keys))
	}
	// A chunk smaller than the list's cut lists every key and says nothing more.
	code, out, _ = s.cli(t, "backfill", "preview", "big.hourly", "--start", "1900-01-01-00:00", "--end", "1900-01-01-05:00", "--chunk-size", "3")
	if code != 0 || !regexp.MustCompile(`(?m)^first chunk\s+big\.hourly: 1900-01-01-00:00, 1900-01-01-01:00, 1900-01-01-02:00$`).MatchString(out) {
		t.Errorf("preview of a small chunk: %d\n%s", code, out)
	}
}

package handlers

import (
	"testing"

	"github.com/tessera-dev/tessera/db"
)

func TestDescribeSelector(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"range","start":"2025-01-01","end":"2025-01-31"}`:                                  "range 2025-01-01 … 2025-01-31",
		`{"type":"explicit","count":3}`:                                                             "explicit list of 3 keys",
		`{"type":"filter","statuses":["missing","failed"],"start":"2025-01-01","end":"2025-02-01"}`: "only missing, failed within 2025-01-01 … 2025-02-01",
		`{"type":"filter","statuses":["stale"],"dimensions":{"region":["eu","us"]}}`:                "only stale, region = eu or us",
		`{"type":"retry"}`: "the failed and upstream-failed partitions of its parent",
		`not json`:         "not json",
	} {
		if got := describeSelectorOf(in, "its parent"); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func TestDescribeSelectionOfRetryChild(t *testing.T) {
	parent := "bf_parent"
	got := describeSelection(db.Backfill{Selector: `{"type":"retry"}`, ParentBackfillID: &parent})
	if want := "the failed and upstream-failed partitions of bf_parent"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

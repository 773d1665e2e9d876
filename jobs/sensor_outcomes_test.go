package jobs

import (
	"reflect"
	"strings"
	"testing"
)

// TestStoredOutcomesKeepTheEstimateBasis: a dry run's preview is stored
// with what its estimate rests on and reads back with it (Basis is not in
// the preview's own JSON); one stored before, with words and no basis,
// reads back with its words.
func TestStoredOutcomesKeepTheEstimateBasis(t *testing.T) {
	t.Parallel()
	secs := 3.0
	basis := EstimateBasis{Assets: 2, NoHistory: []string{"a"}, FromReports: []string{"b"}, Sizes: []RunSize{{Asset: "b", PartitionsARun: 5000}}, ChunkSize: 1000}
	in := []RequestOutcome{
		{RunRequest: RunRequest{Partitions: []string{"eu"}, RunKey: "k1"}, Preview: &Preview{TotalPartitions: 1, EstimateSeconds: &secs, Basis: basis}},
		{RunRequest: RunRequest{Start: "x", End: "y"}, Skipped: "run key k1 used"},
	}
	stored := StoredOutcomes(in)
	if !strings.Contains(stored, `"estimate_basis":{"assets":2,`) {
		t.Fatalf("stored %s, want the preview's estimate_basis", stored)
	}
	out, err := ReadOutcomes(stored)
	if err != nil || len(out) != 2 || out[0].Preview == nil || !reflect.DeepEqual(out[0].Preview.Basis, basis) || out[0].Preview.Estimate != "" ||
		*out[0].Preview.EstimateSeconds != 3 || out[0].RunKey != "k1" || out[1].Preview != nil || out[1].Skipped != "run key k1 used" {
		t.Fatalf("read back %+v (%v), want %+v", out, err, in)
	}
	old, err := ReadOutcomes(`[{"partitions":["eu"],"preview":{"total_partitions":1,"estimate":"3.0 s from recent runs"}}]`)
	if err != nil || len(old) != 1 || old[0].Preview == nil || old[0].Preview.Estimate != "3.0 s from recent runs" || old[0].Preview.Basis.Assets != 0 {
		t.Fatalf("old record read back %+v (%v), want its words and no basis", old, err)
	}
}

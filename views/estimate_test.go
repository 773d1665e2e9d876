package views

import "testing"

// TestPreviewPanelCountsHaveSeparators: the preview of a 1,000,000-partition
// backfill writes every count with thousands separators, the estimate's
// too (the run size it compares, the chunk size), as the rest of the pages.
func TestPreviewPanelCountsHaveSeparators(t *testing.T) {
	pv := PreviewView{Partitions: 1_000_000, Chunks: 10_000, Runs: 10_000,
		Estimate: Estimate{Low: "2 h 0 min", High: "5 days 1 h", Assets: 1,
			Sizes: []RunSize{{Asset: "a.minutely", PartitionsARun: 25_000.4}}, ChunkSize: 1_000}}
	d := doc(t, PreviewPanel(pv))
	for id, want := range map[string]string{
		"preview-partitions": "1,000,000",
		"preview-chunks":     "10,000",
		"preview-runs":       "10,000",
		"preview-estimate": "2 h 0 min to 5 days 1 h from recent runs of these assets at this concurrency " +
			"(a.minutely had about 25,000 partitions a run, these have 1,000: how long a run takes for its size is not known)",
	} {
		if got := text(d.Find(`[data-testid="` + id + `"]`)); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
}

// TestEstimateText words each kind of estimate.
func TestEstimateText(t *testing.T) {
	for _, c := range []struct {
		e    Estimate
		want string
	}{
		{Estimate{Assets: 2, NoHistory: []string{"a", "b"}}, "no history: no finished run or reported duration of these assets yet"},
		{Estimate{Low: "400 ms", Assets: 2, NoHistory: []string{"e.fresh"}}, "at least 400 ms (no history for e.fresh) from recent runs at this concurrency"},
		{Estimate{Low: "3.0 s", Assets: 1, FromReports: []string{"e.reported"}}, "3.0 s from reported materializations of these assets at this concurrency"},
		{Estimate{Low: "3.0 s", Assets: 2, FromReports: []string{"e.reported"}}, "3.0 s from recent runs (reported materializations for e.reported) of these assets at this concurrency"},
		{Estimate{Low: "1.0 s", High: "4.0 s", Assets: 1, Sizes: []RunSize{{"a.daily", 1.04}}, ChunkSize: 8},
			"1.0 s to 4.0 s from recent runs of these assets at this concurrency (a.daily had about 1 partition a run, these have 8: how long a run takes for its size is not known)"},
		{Estimate{Low: "1.0 s", High: "4.0 s", Assets: 2, Sizes: []RunSize{{"a.daily", 1.5}, {"b.daily", 24.4}}, ChunkSize: 1},
			"1.0 s to 4.0 s from recent runs of these assets at this concurrency (a.daily had about 1.5 partitions a run, b.daily had about 24 partitions a run, these have 1: how long a run takes for its size is not known)"},
	} {
		if got := EstimateText(c.e); got != c.want {
			t.Errorf("EstimateText(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
}

// TestTickPreviewEstimateHasSeparators: the schedule page's preview of its
// next tick words the estimate as the new-backfill preview does; without a
// backfill to launch it has none.
func TestTickPreviewEstimateHasSeparators(t *testing.T) {
	e := Estimate{Low: "1 h 0 min", High: "3 h 0 min", Assets: 1, Sizes: []RunSize{{Asset: "raw.events", PartitionsARun: 12_000}}, ChunkSize: 2_400}
	d := doc(t, TickPreviewBlock(TickPreviewView{TickAt: "2026-03-02 00:00 UTC", Selection: "range", Partitions: 1_000_000, Chunks: 417, Estimate: &e}))
	if got := text(d.Find(`[data-testid="preview-estimate"]`)); got != EstimateText(e) ||
		got != "1 h 0 min to 3 h 0 min from recent runs of these assets at this concurrency (raw.events had about 12,000 partitions a run, these have 2,400: how long a run takes for its size is not known)" {
		t.Errorf("tick preview estimate %q", got)
	}
	if got := text(d.Find(`[data-testid="preview-partitions"]`)); got != "1,000,000" {
		t.Errorf("tick preview partitions %q, want 1,000,000", got)
	}
	if d := doc(t, TickPreviewBlock(TickPreviewView{Skip: "the cron never fires again"})); d.Find(`[data-testid="preview-estimate"]`).Length() != 0 {
		t.Error("a tick that launches nothing shows an estimate")
	}
}

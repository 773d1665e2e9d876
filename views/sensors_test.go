package views

import "testing"

// The Sensors page says how to declare a sensor when there is none, and
// colours each state; a push sensor's page lists its events (and says how
// to send one), a poll sensor's its evaluations, cursor and run keys.
func TestSensorViews(t *testing.T) {
	d := doc(t, SensorsView(Page{Title: "Sensors", Nav: "sensors"}, SensorsPage{}))
	if text(d.Find(`[data-testid="sensors-empty"]`)) == "" || d.Find(`[data-testid="sensors-table"]`).Length() != 0 {
		t.Fatal("no sensor: want the empty note and no table")
	}
	rows := []SensorRow{
		{Name: "a", Href: SensorHref("a"), Kind: "push", State: SensorStateOK, Events: 2, Launches: 1},
		{Name: "b/c", Href: SensorHref("b/c"), Kind: "poll", State: SensorStateError, Evaluator: "http every 1m (timeout 10s)", LastError: "boom", Evals: 3, Failures: 2},
		{Name: "d", Href: SensorHref("d"), Kind: "poll", State: SensorStatePaused},
		{Name: "e", Href: SensorHref("e"), Kind: "push", State: SensorStateDisabled},
	}
	d = doc(t, SensorsView(Page{}, SensorsPage{Sensors: rows}))
	for i, want := range []string{"st-SUCCEEDED", "st-FAILED", "st-PAUSED", "st-CANCELED"} {
		if b := d.Find(`[data-testid="sensor-row"]`).Eq(i).Find(`[data-testid="sensor-state"]`); !b.HasClass(want) || text(b) != rows[i].State {
			t.Errorf("row %d: badge %q class %q, want %s", i, text(b), b.AttrOr("class", ""), want)
		}
	}
	b := d.Find(`[data-testid="sensor-row"]`).Eq(1)
	if b.Find(`a`).AttrOr("href", "") != "/sensors/b%2Fc" || text(b.Find(`[data-testid="sensor-counts"]`)) != "3 evaluations, 0 backfills, 2 failing in a row" ||
		text(b.Find(`[data-testid="sensor-error"]`)) != "boom" {
		t.Errorf("poll row: %q", text(b))
	}
	if text(d.Find(`[data-testid="sensor-row"]`).Eq(0).Find(`[data-testid="sensor-last"]`)) != "nothing yet" {
		t.Errorf("a sensor with no event says so")
	}

	push := doc(t, SensorPageView(Page{}, SensorDetail{SensorRow: rows[0]}))
	if push.Find(`[data-testid="events-empty"] code`).First().Text() != "POST /api/v1/sensors/a/events" || push.Find(`[data-testid="cursor"]`).Length() != 0 ||
		push.Find(`[data-testid="run-key-search"]`).Length() != 0 || push.Find(`[data-testid="sensor-actions"]`).Length() != 0 {
		t.Errorf("push page: %q", text(push.Find("body")))
	}
	poll := doc(t, SensorPageView(Page{}, SensorDetail{SensorRow: rows[1], Cursor: "c9", HasCursor: true, Prefix: "k1",
		Evaluations: []EvaluationRow{{ID: 5, Kind: "dry_run", CursorBefore: "c9", CursorAfter: "c10", Requests: []EvalRequestRow{{Assets: "x", Selection: "2 partitions (eu, us)", RunKey: "k1", Preview: "would build 2 partitions in 1 chunks"}}, LogTail: "log"}},
		EvalNext:    "/sensors/b%2Fc?evaluations=abc#evaluations"}))
	if text(poll.Find(`[data-testid="cursor"]`)) != "c9" || text(poll.Find(`[data-testid="last-error"]`)) != "Last error: boom" ||
		text(poll.Find(`[data-testid="evaluation-kind"]`)) != "dry run" || text(poll.Find(`[data-testid="request-preview"]`)) != "would build 2 partitions in 1 chunks" ||
		poll.Find(`[data-testid="evaluations-next"]`).AttrOr("href", "") != "/sensors/b%2Fc?evaluations=abc#evaluations" ||
		text(poll.Find(`[data-testid="run-keys-empty"]`)) != "No run key starting with k1 yet." || poll.Find(`[data-testid="run-key-prefix"]`).AttrOr("value", "") != "k1" {
		t.Errorf("poll page: %q", text(poll.Find("body")))
	}
}

package views

import (
	"strings"
	"testing"
)

// A backfill a schedule or a sensor launched names it and links to it;
// one a person launched names the person.
func TestCreatedByText(t *testing.T) {
	pg := doc(t, CreatedByText("schedule:nightly.build"))
	if a := pg.Find(`a[data-testid="created-by-schedule"]`); a.AttrOr("href", "") != "/schedules/nightly.build" || text(pg.Selection) != "schedule nightly.build" {
		t.Fatalf("schedule: %q", text(pg.Selection))
	}
	pg = doc(t, CreatedByText("sensor:files.landed"))
	if a := pg.Find(`a[data-testid="created-by-sensor"]`); a.AttrOr("href", "") != "/sensors/files.landed" || text(pg.Selection) != "sensor files.landed" {
		t.Fatalf("sensor: %q", text(pg.Selection))
	}
	if SensorOf("sensors") != "" || SensorOf("alice") != "" || SensorOf("sensor:x") != "x" {
		t.Fatal("SensorOf")
	}
	pg = doc(t, CreatedByText("alice"))
	if pg.Find(`a`).Length() != 0 || text(pg.Selection) != "alice" {
		t.Fatalf("person: %q", text(pg.Selection))
	}
	if ScheduleOf("schedule-maker") != "" || ScheduleOf("schedule:a b") != "a b" || ScheduleHref("a b") != "/schedules/a%20b" {
		t.Fatal("ScheduleOf / ScheduleHref")
	}
}

// The strip is one cell per tick, oldest first, each coloured by outcome
// (class) with its time and reason in its title; its label counts them.
func TestTickStrip(t *testing.T) {
	pg := doc(t, TickStrip([]TickCell{{"skipped", "01:05: skipped (paused)"}, {"skipped", "02:05: skipped (paused)"}, {"launched", "03:05: launched"}, {"failed", "04:05: failed (boom)"}}))
	rects := pg.Find(`[data-testid="tick-strip"] rect`)
	if rects.Length() != 4 || rects.Eq(0).AttrOr("class", "") != "tick-skipped" || rects.Eq(3).AttrOr("class", "") != "tick-failed" ||
		rects.Eq(3).AttrOr("x", "") != "30" || text(rects.Eq(3).Find("title")) != "04:05: failed (boom)" {
		t.Fatalf("strip %d cells", rects.Length())
	}
	if l := pg.Find(`svg`).AttrOr("aria-label", ""); l != "last 4 ticks, oldest first: 2 skipped, 1 launched, 1 failed" {
		t.Fatalf("label %q", l)
	}
	if doc(t, TickStrip(nil)).Find(`[data-testid="tick-strip-empty"]`).Length() != 1 {
		t.Fatal("no tick: a dash")
	}
}

// The schedule page: buttons carry the CSRF token and post to their
// action; a preview that would launch nothing says why; a paused
// schedule says who paused it.
func TestSchedulePageView(t *testing.T) {
	d := ScheduleDetail{ScheduleRow: ScheduleRow{Name: "s", Href: "/schedules/s", State: SchedulePaused, Timezone: "Europe/Berlin"},
		PausedBy: "by alice at 2026-03-01 10:00 UTC", CSRF: "tok",
		Buttons:   []ScheduleButton{{Name: ScheduleActionResume, Label: "Resume", Href: "/schedules/s/resume"}, {Name: ScheduleActionTrigger, Label: "Run now", Href: "/schedules/s/trigger"}},
		Preview:   TickPreviewView{TickAt: "2026-03-02 00:00 CET (2026-03-01 23:00 UTC)", Skip: "nothing to build: no partitions yet", Note: "the schedule is paused"},
		NextTicks: []NextTick{{Local: "2026-03-02 00:00 CET", UTC: "2026-03-01 23:00 UTC"}},
		Ticks:     []TickRow{{ID: "s:1", Outcome: "skipped", Reason: "paused"}},
		Outcomes:  []string{"launched", "skipped"}, Outcome: "skipped"}
	pg := doc(t, SchedulePageView(Page{Title: "Schedule s", Nav: "automation", User: "u", Browse: true}, d))
	forms := pg.Find(`[data-testid="schedule-actions"] form`)
	if forms.Length() != 2 || forms.Eq(0).AttrOr("action", "") != "/schedules/s/resume" || forms.Eq(0).Find(`input[name="_csrf"]`).AttrOr("value", "") != "tok" ||
		forms.Eq(1).Find(`[data-testid="action-trigger"]`).Length() != 1 {
		t.Fatal("buttons")
	}
	if text(pg.Find(`[data-testid="preview-skip"]`)) != "nothing to build: no partitions yet" || pg.Find(`[data-testid="preview-partitions"]`).Length() != 0 ||
		!strings.Contains(pg.Find(`[data-testid="preview-note"]`).Text(), "paused") {
		t.Fatalf("preview: %q", text(pg.Find(`[data-testid="tick-preview"]`)))
	}
	if !strings.Contains(pg.Find(`[data-testid="paused-by"]`).Text(), "by alice") || pg.Find(`[data-testid="next-ticks"] th`).First().Text() != "Europe/Berlin" ||
		text(pg.Find(`[data-testid="tick-reason"]`)) != "paused" || pg.Find(`option[value="skipped"][selected]`).Length() != 1 {
		t.Fatalf("page: %q", text(pg.Find("main")))
	}
	if pg.Find(`[data-testid="nav-automation"][aria-current="page"]`).Length() != 1 {
		t.Fatal("the nav marks Automation")
	}
}

// No schedule: the page says how to declare one.
func TestAutomationViewEmpty(t *testing.T) {
	pg := doc(t, AutomationView(Page{Title: "Automation"}, AutomationPage{}))
	if !strings.Contains(pg.Find(`[data-testid="schedules-empty"]`).Text(), "schedules:") {
		t.Fatal("empty state")
	}
}

package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

func renderDoc(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// A backfill a schedule or a sensor launched names it and links to it;
// one a person launched names the person.
func TestCreatedByText(t *testing.T) {
	doc := renderDoc(t, CreatedByText("schedule:nightly.build"))
	if a := doc.Find(`a[data-testid="created-by-schedule"]`); a.AttrOr("href", "") != "/schedules/nightly.build" || squash(doc.Text()) != "schedule nightly.build" {
		t.Fatalf("schedule: %q", squash(doc.Text()))
	}
	doc = renderDoc(t, CreatedByText("sensor:files.landed"))
	if a := doc.Find(`a[data-testid="created-by-sensor"]`); a.AttrOr("href", "") != "/sensors/files.landed" || squash(doc.Text()) != "sensor files.landed" {
		t.Fatalf("sensor: %q", squash(doc.Text()))
	}
	if SensorOf("sensors") != "" || SensorOf("alice") != "" || SensorOf("sensor:x") != "x" {
		t.Fatal("SensorOf")
	}
	doc = renderDoc(t, CreatedByText("alice"))
	if doc.Find(`a`).Length() != 0 || squash(doc.Text()) != "alice" {
		t.Fatalf("person: %q", squash(doc.Text()))
	}
	if ScheduleOf("schedule-maker") != "" || ScheduleOf("schedule:a b") != "a b" || ScheduleHref("a b") != "/schedules/a%20b" {
		t.Fatal("ScheduleOf / ScheduleHref")
	}
}

// The strip is one cell per tick, oldest first, each coloured by outcome
// (class) with its time and reason in its title; its label counts them.
func TestTickStrip(t *testing.T) {
	doc := renderDoc(t, TickStrip([]TickCell{{"skipped", "01:05: skipped (paused)"}, {"skipped", "02:05: skipped (paused)"}, {"launched", "03:05: launched"}, {"failed", "04:05: failed (boom)"}}))
	rects := doc.Find(`[data-testid="tick-strip"] rect`)
	if rects.Length() != 4 || rects.Eq(0).AttrOr("class", "") != "tick-skipped" || rects.Eq(3).AttrOr("class", "") != "tick-failed" ||
		rects.Eq(3).AttrOr("x", "") != "30" || squash(rects.Eq(3).Find("title").Text()) != "04:05: failed (boom)" {
		t.Fatalf("strip %d cells", rects.Length())
	}
	if l := doc.Find(`svg`).AttrOr("aria-label", ""); l != "last 4 ticks, oldest first: 2 skipped, 1 launched, 1 failed" {
		t.Fatalf("label %q", l)
	}
	if renderDoc(t, TickStrip(nil)).Find(`[data-testid="tick-strip-empty"]`).Length() != 1 {
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
	doc := renderDoc(t, SchedulePageView(Page{Title: "Schedule s", Nav: "automation", User: "u", Browse: true}, d))
	forms := doc.Find(`[data-testid="schedule-actions"] form`)
	if forms.Length() != 2 || forms.Eq(0).AttrOr("action", "") != "/schedules/s/resume" || forms.Eq(0).Find(`input[name="_csrf"]`).AttrOr("value", "") != "tok" ||
		forms.Eq(1).Find(`[data-testid="action-trigger"]`).Length() != 1 {
		t.Fatal("buttons")
	}
	if squash(doc.Find(`[data-testid="preview-skip"]`).Text()) != "nothing to build: no partitions yet" || doc.Find(`[data-testid="preview-partitions"]`).Length() != 0 ||
		!strings.Contains(doc.Find(`[data-testid="preview-note"]`).Text(), "paused") {
		t.Fatalf("preview: %q", squash(doc.Find(`[data-testid="tick-preview"]`).Text()))
	}
	if !strings.Contains(doc.Find(`[data-testid="paused-by"]`).Text(), "by alice") || doc.Find(`[data-testid="next-ticks"] th`).First().Text() != "Europe/Berlin" ||
		squash(doc.Find(`[data-testid="tick-reason"]`).Text()) != "paused" || doc.Find(`option[value="skipped"][selected]`).Length() != 1 {
		t.Fatalf("page: %q", squash(doc.Find("main").Text()))
	}
	if doc.Find(`[data-testid="nav-automation"][aria-current="page"]`).Length() != 1 {
		t.Fatal("the nav marks Automation")
	}
}

// No schedule: the page says how to declare one.
func TestAutomationViewEmpty(t *testing.T) {
	doc := renderDoc(t, AutomationView(Page{Title: "Automation"}, AutomationPage{}))
	if !strings.Contains(doc.Find(`[data-testid="schedules-empty"]`).Text(), "schedules:") {
		t.Fatal("empty state")
	}
}

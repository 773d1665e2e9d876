package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// timeline renders a backfill's events, newest first.
func (h *Handler) timeline(ctx context.Context, id string) ([]views.EventRow, error) {
	evs, err := h.Store.EventHeadsBySubject(ctx, "backfill:"+id, TimelineLimit)
	if err != nil {
		return nil, err
	}
	texts, err := h.eventTexts.summarize(ctx, h.Store, evs)
	if err != nil {
		return nil, err
	}
	out := make([]views.EventRow, 0, len(evs))
	for i, e := range evs {
		out = append(out, views.EventRow{At: fmtTime(zoneOf(ctx), e.Time()), Type: e.Type, Actor: e.Actor, Text: texts[i]})
	}
	return out, nil
}

func eventText(e db.Event) string {
	switch e.Type {
	case db.EvBackfillCreated:
		var p struct {
			Backfill db.Backfill `json:"backfill"`
		}
		_ = json.Unmarshal([]byte(e.Payload), &p)
		return fmt.Sprintf("Created: %s in %s", countOf(int(p.Backfill.TotalPartitions), "partition"), countOf(int(p.Backfill.TotalChunks), "chunk"))
	case db.EvBackfillState:
		var p db.BackfillStateChanged
		_ = json.Unmarshal([]byte(e.Payload), &p)
		s := fmt.Sprintf("%s → %s", p.From, p.To)
		if p.Terminate {
			s += " (terminate running)"
		}
		if p.Reason != "" {
			s += " — " + p.Reason
		}
		if n := failedCount(p.Failures); n > 0 {
			s += fmt.Sprintf("; %s that waited for a retry count as failed", countOf(n, "partition"))
		}
		return s
	case db.EvRunsPlanned:
		var p struct {
			NextChunk int64 `json:"next_chunk"`
			Runs      []struct {
				Chunk int64 `json:"chunk"`
			} `json:"runs"`
		}
		_ = json.Unmarshal([]byte(e.Payload), &p)
		if len(p.Runs) == 1 {
			return fmt.Sprintf("Chunk %d planned", p.Runs[0].Chunk)
		}
		if len(p.Runs) > 1 {
			return fmt.Sprintf("%d chunks planned (%d–%d)", len(p.Runs), p.Runs[0].Chunk, p.Runs[len(p.Runs)-1].Chunk)
		}
		return "Chunks planned"
	case db.EvAttemptsStarted:
		var p db.AttemptsStarted
		_ = json.Unmarshal([]byte(e.Payload), &p)
		parts := 0
		for _, a := range p.Attempts {
			parts += len(a.Parts)
		}
		return attemptsStartedText(p.Attempts, parts)
	case db.EvAttemptsFinished:
		var p db.AttemptsFinished
		_ = json.Unmarshal([]byte(e.Payload), &p)
		return attemptsFinishedText(p)
	}
	return e.Type
}

// attemptsStartedText says how many attempts of how many partitions
// started (which attempt of which run, when it is one retry).
func attemptsStartedText(attempts []db.AttemptStart, parts int) string {
	if len(attempts) == 1 && attempts[0].Attempt > 1 {
		return fmt.Sprintf("Attempt %d of %s started (%s)", attempts[0].Attempt, attempts[0].RunID, countOf(parts, "partition"))
	}
	return fmt.Sprintf("%s started (%s)", countOf(len(attempts), "attempt"), countOf(parts, "partition"))
}

// attemptsFinishedText says how a batch of attempts ended: counts per
// outcome, retries queued, and the first error.
func attemptsFinishedText(p db.AttemptsFinished) string {
	byState := map[string]int{}
	var order []string
	retries, firstErr := 0, ""
	for _, a := range p.Attempts {
		outcome := a.State
		if a.State == db.AttemptSucceeded && a.RunState == db.RunFailed {
			// It built what it ran, but partitions of a failed upstream were
			// skipped, so its chunk failed.
			outcome = "succeeded with skipped partitions (chunk failed)"
		}
		if byState[outcome] == 0 {
			order = append(order, outcome)
		}
		byState[outcome]++
		if a.RunState == db.RunQueued {
			retries++
		}
		if firstErr == "" && a.Error != "" {
			firstErr = a.Error
		}
	}
	var outcomes []string
	for _, s := range order {
		outcomes = append(outcomes, fmt.Sprintf("%d %s", byState[s], s))
	}
	s := fmt.Sprintf("%s finished: %s", countOf(len(p.Attempts), "attempt"), strings.Join(outcomes, ", "))
	if retries > 0 {
		s += fmt.Sprintf("; %s queued", countOf(retries, "retry"))
	}
	if firstErr != "" {
		if r := []rune(firstErr); len(r) > 120 {
			firstErr = string(r[:120]) + "…"
		}
		s += " — " + firstErr
	}
	return s
}

// countOf writes "1 attempt", "3 attempts", "2 retries".
func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return views.Num(int64(n)) + " " + strings.TrimSuffix(word, "y") + "ies"
	}
	return views.Num(int64(n)) + " " + word + "s"
}

// BackfillEventsPartial renders the timeline (htmx).
func (h *Handler) BackfillEventsPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	evs, err := h.timeline(c.Request().Context(), b.ID)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.Timeline(BackfillHref(b.ID), evs, !db.BackfillTerminal(b.State)))
}

package handlers

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// canOperate reports whether the request may launch and steer backfills.
func canOperate(c echo.Context) bool {
	p := CurrentPrincipal(c)
	return p != nil && p.Role >= auth.RoleOperator
}

// actionsFor lists the buttons allowed in b's state (for an operator).
func actionsFor(b db.Backfill, hasChild bool) []views.Action {
	href := BackfillHref(b.ID)
	var out []views.Action
	switch b.State {
	case db.BackfillPending, db.BackfillRunning:
		out = append(out, views.Action{Name: views.ActionPause, Label: "Pause", Href: href + "/pause"})
	case db.BackfillPaused:
		out = append(out, views.Action{Name: views.ActionResume, Label: "Resume", Href: href + "/resume"})
	}
	switch b.State {
	case db.BackfillPending, db.BackfillRunning, db.BackfillPaused:
		out = append(out, views.Action{Name: views.ActionCancel, Label: "Cancel", Href: href + "/cancel"})
	case db.BackfillCanceling:
		if !b.Terminate {
			// A graceful cancel waits for the running chunks; this ends them.
			out = append(out, views.Action{Name: views.ActionTerminate, Label: "Terminate running chunks", Href: href + "/cancel"})
		}
	}
	if failures(b) > 0 && !hasChild && (db.BackfillTerminal(b.State) || b.State == db.BackfillPaused) {
		out = append(out, views.Action{Name: views.ActionRetryFailed, Label: "Retry failed", Href: href + "/retry-failed"})
	}
	return out
}

// transitions are the engine's state changes behind the page's buttons.
var transitions = map[views.ActionName]string{views.ActionPause: jobs.ActPause, views.ActionResume: jobs.ActResume, views.ActionCancel: jobs.ActCancel}

// BackfillAction handles the Pause, Resume, Cancel and Retry-failed buttons.
// A stale expected_state_version re-renders the page with a conflict message.
func (h *Handler) BackfillAction(c echo.Context) error {
	eng, err := h.engine()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	id, action := c.Param("id"), c.Param("action")
	expected, err := intParam("expected_state_version", c.FormValue("expected_state_version"), 0, 1, "a positive number")
	if err != nil {
		return err
	}
	switch views.ActionName(action) {
	case views.ActionPause, views.ActionResume, views.ActionCancel:
		_, err = eng.Transition(ctx, id, transitions[views.ActionName(action)], expected, c.FormValue("terminate") != "", actor(c))
	case views.ActionRetryFailed:
		var cr jobs.Created
		cr, err = eng.RetryFailed(ctx, id, jobs.RetryOptions{RequestID: c.FormValue("retry_request_id"), ExpectedStateVersion: expected}, actor(c))
		if err == nil {
			return c.Redirect(http.StatusSeeOther, BackfillHref(cr.Backfill.ID))
		}
	default:
		return NotFound("no backfill action %q", action)
	}
	if err != nil {
		load := func() (views.BackfillDetail, error) { return h.loadDetail(c, id) }
		return refusedOnPage(c, engineErr(err), []int{http.StatusConflict}, load, func(d views.BackfillDetail, msg string, ue *UserError) templ.Component {
			d.Message = msg
			if ue.Field == "expected_state_version" {
				// The engine's message says how an API client catches up;
				// the page has done so already.
				d.Message = fmt.Sprintf("Someone changed this backfill while you were looking at it: it is now %s. The page has been reloaded — check the state and try again.", views.BackfillStateLabel(d.State, 0))
			}
			return views.BackfillDetailPage(page(c, d.Title, "backfills"), d)
		})
	}
	return c.Redirect(http.StatusSeeOther, BackfillHref(id))
}

// BackfillActionsPartial re-renders the buttons when the backfill's
// state_version differs from v; 204 (htmx keeps the buttons) otherwise.
func (h *Handler) BackfillActionsPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	if v := c.QueryParam("v"); v != "" && v == strconv.FormatInt(b.StateVersion, 10) {
		return c.NoContent(http.StatusNoContent)
	}
	d, err := h.loadDetailParts(c, b.ID, 0)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.BackfillActionsLive(d))
}

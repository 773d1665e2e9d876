package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// isWriteFault reports whether err is a write the database refused (disk
// full, locked, read-only, I/O error).
func isWriteFault(err error) bool {
	var we *db.WriteError
	return errors.As(err, &we)
}

// writeCauses words each write fault's cause for users, and says what makes
// the store writable again.
var writeCauses = map[db.WriteCause]struct{ text, fix string }{
	db.CauseDiskFull: {"disk full", "free space on the database's disk"},
	db.CauseLocked:   {"locked by another process", "end the other process that holds the database"},
	db.CauseReadOnly: {"read-only", "make the database file and its directory writable"},
	db.CauseIOError:  {"I/O error", ""},
}

// writeCauseText words a write fault's cause for users.
func writeCauseText(c db.WriteCause) string {
	if w, ok := writeCauses[c]; ok {
		return w.text
	}
	return string(c)
}

// writeCauseFix says what makes the store writable again.
func writeCauseFix(c db.WriteCause) string {
	if w := writeCauses[c]; w.fix != "" {
		return w.fix
	}
	return "check the disk; the server log has the details"
}

// retryAfter is the Retry-After (seconds) of a write fault: a lock is
// usually short, a full or read-only disk needs an operator.
func retryAfter(c db.WriteCause) int {
	if c == db.CauseLocked {
		return 5
	}
	return 30
}

// StoreUnwritable is the 503 of a command the database refused to write:
// it names the cause (never the driver's text) and when writes began to
// fail; nothing of the command was written.
func StoreUnwritable(err error) *UserError {
	var we *db.WriteError
	if !errors.As(err, &we) {
		return nil
	}
	msg := fmt.Sprintf("the database cannot be written: %s (since %s); nothing was changed. %s: writes resume by themselves, then retry",
		writeCauseText(we.Cause), we.Since.UTC().Format(time.RFC3339), upperFirst(writeCauseFix(we.Cause)))
	return &UserError{Status: http.StatusServiceUnavailable, Code: "store_unwritable", Message: msg, RetryAfter: retryAfter(we.Cause)}
}

// unavailableRetry is the Retry-After (seconds) while the store does not
// answer: a restart of PostgreSQL takes seconds.
const unavailableRetry = 5

// StoreUnavailable is the 503 of a request made while the database does
// not answer (PostgreSQL down, restarting, unreachable): reads and writes
// alike; nothing of a command was written. Its message names no driver
// text (the server log has it).
func StoreUnavailable(err error) *UserError {
	if !db.IsUnavailable(err) {
		return nil
	}
	return &UserError{Status: http.StatusServiceUnavailable, Code: "store_unavailable", RetryAfter: unavailableRetry,
		Message: "the database does not answer (PostgreSQL is down or unreachable); nothing was changed. The server reconnects by itself once PostgreSQL answers again: check that it runs, then retry"}
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// storeReason is the store's write fault as one line ("" while it writes),
// its time in loc.
func storeReason(h db.WriteHealth, loc *time.Location) string {
	if !h.Failing {
		return ""
	}
	return fmt.Sprintf("the database cannot be written since %s: %s", fmtTime(loc, h.Since), writeCauseText(h.Cause))
}

// storeBanner is what every page says while the store cannot write, its
// time in the reader's zone loc.
func storeBanner(h db.WriteHealth, loc *time.Location) string {
	if !h.Failing {
		return ""
	}
	return upperFirst(storeReason(h, loc)) + ". Changes fail and backfills do not progress. " + upperFirst(writeCauseFix(h.Cause)) + "; everything resumes by itself."
}

// storeWait is what a running backfill waits for while the store cannot
// write (nil while it writes).
func storeWait(h db.WriteHealth) *jobs.RunWait {
	if !h.Failing {
		return nil
	}
	return &jobs.RunWait{Reason: storeReason(h, time.UTC)}
}

// ctxStoreBanner carries the banner from StoreHealth to page.
const ctxStoreBanner = "store_banner"

// StoreHealth puts the store's write fault, if any, where every page's
// frame finds it (the banner).
func (h *Handler) StoreHealth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if b := h.banner(c); b != "" {
			c.Set(ctxStoreBanner, b)
		}
		return next(c)
	}
}

// FaultBannerPartial is the banner alone (GET /fault-banner), which every
// page asks for again every few seconds.
func (h *Handler) FaultBannerPartial(c echo.Context) error {
	return render(c, http.StatusOK, views.FaultBanner(h.banner(c)))
}

// banner is what every page says of the store ("" while it is well): that
// it does not answer, else that it cannot write.
func (h *Handler) banner(c echo.Context) string {
	if down, since := h.Store.Unreachable(); down {
		return fmt.Sprintf("The database does not answer since %s (PostgreSQL is down or unreachable). Pages and changes fail and backfills do not progress until it answers again; everything resumes by itself.", fmtTime(zoneOfC(c), since))
	}
	return storeBanner(h.Store.WriteHealth(), zoneOfC(c))
}

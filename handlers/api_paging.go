package handlers

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// The API's lists page with ?limit= and an opaque ?cursor= (the
// next_cursor of the page before): this file reads both and makes the
// cursors.

// pageLimit reads ?limit= (def when left out, 1..maxN).
func pageLimit(c echo.Context, def, maxN int) (int, error) {
	limit := def
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxN {
			return 0, BadRequest("limit", "limit must be a whole number from 1 to %d, got %q", maxN, v)
		}
		limit = n
	}
	return limit, nil
}

// limitUpTo is pageLimit with def and maxN, for listPage.
func limitUpTo(def, maxN int) func(echo.Context) (int, error) {
	return func(c echo.Context) (int, error) { return pageLimit(c, def, maxN) }
}

// parseLimit reads ?limit= (default 100, 1..MaxPageLimit).
func parseLimit(c echo.Context) (int, error) { return pageLimit(c, 100, MaxPageLimit) }

// encodeCursor and decodeCursor make opaque cursors from a position.
func encodeCursor(kind string, pos int64) string {
	return encodeCursorParts(kind, strconv.FormatInt(pos, 10))
}

func decodeCursor(s, kind string) (int64, error) {
	parts, err := decodeCursorParts(s, kind, 1)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || n < 0 {
		return 0, badCursor(s)
	}
	return n, nil
}

// encodeCursorParts makes an opaque cursor of a position with several parts
// (only the last may contain ":").
func encodeCursorParts(kind string, parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strings.Join(parts, ":")))
}

// decodeCursorParts reads a cursor of encodeCursorParts with n parts.
func decodeCursorParts(s, kind string, n int) ([]string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, badCursor(s)
	}
	k, v, ok := strings.Cut(string(b), ":")
	if !ok || k != kind {
		return nil, badCursor(s)
	}
	parts := strings.SplitN(v, ":", n)
	if len(parts) != n {
		return nil, badCursor(s)
	}
	return parts, nil
}

// badCursor is the 400 of a cursor the list did not give out: the API's
// words name its fields; a page's (the same position in a page's link,
// such as a schedule's or a sensor's older ticks, evaluations or events)
// say what the reader can do.
func badCursor(s string) *UserError {
	ue := BadRequest("cursor", "cursor %q is not one this list gave out; pass the next_cursor of the previous page, or leave cursor out to start at the first page", s)
	ue.Page = "this page link is out of date; go back to the first page"
	return ue
}

// decodeListCursor reads a cursor of a list that gave out plain integers
// before it gave out opaque cursors (the backfills and the chunks lists): a
// stored integer of at least legacyMin still works; anything else must be
// one of kind's opaque cursors.
func decodeListCursor(s, kind string, legacyMin int64) (int64, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" { // never an opaque cursor: "kind:" encodes to letters
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= legacyMin {
			return n, nil
		}
	}
	return decodeCursor(s, kind)
}

// cursorOf decodes kind's cursors of one position (decodeCursor), for
// listPage.
func cursorOf(kind string) func(string) (int64, error) {
	return func(s string) (int64, error) { return decodeCursor(s, kind) }
}

// listPage reads a list's ?limit= with limit and its ?cursor=, which
// decode turns into the position the page starts from (from when the
// cursor is left out).
func listPage[P any](c echo.Context, limit func(echo.Context) (int, error), from P, decode func(string) (P, error)) (pos P, n int, err error) {
	if n, err = limit(c); err != nil {
		return pos, 0, err
	}
	if pos, err = cursorParam(c, from, decode); err != nil {
		return pos, 0, err
	}
	return pos, n, nil
}

// cursorParam is ?cursor= as decode reads it (from when it is left out).
func cursorParam[P any](c echo.Context, from P, decode func(string) (P, error)) (P, error) {
	if v := c.QueryParam("cursor"); v != "" {
		return decode(v)
	}
	return from, nil
}

// listCursorOf decodes kind's cursors of a list that gave out plain
// integers before (decodeListCursor), for cursorParam.
func listCursorOf(kind string, legacyMin int64) func(string) (int64, error) {
	return func(s string) (int64, error) { return decodeListCursor(s, kind, legacyMin) }
}

// stateParam reads a comma-separated filter ?name= of values in known
// (each trimmed and put in known's case by norm); what says what they are
// in the 400 of an unknown one ("state", "run state").
func stateParam(c echo.Context, name, what string, known []string, norm func(string) string) ([]string, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = norm(strings.TrimSpace(s))
		if !slices.Contains(known, s) {
			return nil, BadRequest(name, "unknown %s %q; use %s", what, s, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

// pageOf cuts the rows a store read for one more than limit to limit, and
// makes the cursor of the next page from the page's last row ("" on the
// last page).
func pageOf[R any](rows []R, limit int, cursor func(last R) string) ([]R, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, cursor(rows[limit-1])
}

// encodeAtCursor and decodeAtCursor make and read kind's cursors of a time
// (Unix milliseconds) and a key.
func encodeAtCursor(kind string, at int64, key string) string {
	return encodeCursorParts(kind, strconv.FormatInt(at, 10), key)
}

func decodeAtCursor(s, kind string) (int64, string, error) {
	parts, err := decodeCursorParts(s, kind, 2)
	if err != nil {
		return 0, "", err
	}
	at, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return 0, "", badCursor(s)
	}
	return at, parts[1], nil
}

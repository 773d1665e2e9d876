package handlers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// MaxReportItems is the most materializations one request may report.
const MaxReportItems = 10000

// maxReportID is the longest code_version or run_id a report may carry.
const maxReportID = 200

// MaterializationJSON is one reported outcome in POST /api/v1/materializations.
type MaterializationJSON struct {
	Asset       string          `json:"asset"`
	Partition   string          `json:"partition"`
	Status      string          `json:"status"`
	CodeVersion *string         `json:"code_version"`
	Metadata    json.RawMessage `json:"metadata"`
	Error       string          `json:"error"`
	RunID       string          `json:"run_id"`
	At          string          `json:"at"`
	// StartedAt is when building the partition began (optional); with it the
	// backfill preview estimates an asset that has no run yet. omitempty
	// keeps the Idempotency-Key fingerprint of a request without it as it
	// was before the field existed.
	StartedAt string `json:"started_at,omitempty"`
}

// Actor names who is acting for events; the accounts layer sets it.
var Actor = func(c echo.Context) string { return "api" }

// decodeReport accepts one object, an array, or {"materializations": [...]}.
func decodeReport(body []byte) ([]MaterializationJSON, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, BadRequest("", "the request body is empty; send a JSON object or array of materializations")
	}
	// strict decodes b into v; root names a bare array in error paths, as the
	// items are named (materializations[1].partition). b is the body as sent,
	// so that an error's byte, line and column are the client's.
	strict := func(b []byte, v any, root string) error {
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return decodeError(b, v, err, root)
		}
		if err := trailingData(b, d.InputOffset()); err != nil {
			return err
		}
		if err := exactKeys(b, v, root); err != nil {
			return err
		}
		return nil
	}
	root := ""
	if trimmed[0] == '[' {
		root = "materializations"
	}
	if err := invalidUTF8(body, root); err != nil {
		return nil, err
	}
	var items []MaterializationJSON
	var err error
	switch trimmed[0] {
	case '[':
		err = strict(body, &items, "materializations")
	case '{':
		if bytes.Contains(body, []byte(`"materializations"`)) {
			var wrap struct {
				Materializations []MaterializationJSON `json:"materializations"`
			}
			err = strict(body, &wrap, "")
			items = wrap.Materializations
		} else {
			var one MaterializationJSON
			err = strict(body, &one, "")
			items = []MaterializationJSON{one}
		}
	default:
		err = BadRequest("", "the request body is not valid: expected a JSON object or array of materializations, but it starts with %s", nearText(trimmed, 0))
	}
	if err != nil {
		return nil, err
	}
	return items, nil
}

// APIReportMaterializations records materializations reported by a pipeline
// running outside Tessera. Every item is validated before anything is
// written; the batch is one transaction. An Idempotency-Key header makes a
// retried request a no-op.
func (h *Handler) APIReportMaterializations(c echo.Context) error {
	ctx := c.Request().Context()
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return BadRequest("", "could not read the request body: %v", err)
	}
	items, err := decodeReport(body)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return BadRequest("materializations", "no materializations in the request")
	}
	if len(items) > MaxReportItems {
		return BadRequest("materializations", "%d materializations in one request; send at most %d per request", len(items), MaxReportItems)
	}
	now := h.Now()
	ms, err := h.validateReport(c, items, now)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	idem := db.Idempotency{Key: key}
	if idem.Key != "" {
		// The request as sent (not the times and run ids filled in for it).
		b, _ := json.Marshal(items)
		sum := sha256.Sum256(b)
		idem.Fingerprint = hex.EncodeToString(sum[:16])
	}
	res, err := h.Store.RecordMaterializationsOnce(ctx, ms, Actor(c), idem, now)
	if errors.Is(err, db.ErrIdempotencyConflict) {
		ue := Conflict("")
		ue.Field = "Idempotency-Key"
		return withHint(ue, fmt.Sprintf("Idempotency-Key %q was used for a different batch of materializations", idem.Key), HintIdempotencyConflict, map[string]string{"what": "batch"})
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, res)
}

func (h *Handler) validateReport(c echo.Context, items []MaterializationJSON, now time.Time) ([]db.Materialization, error) {
	ctx := c.Request().Context()
	ws := h.Workspace()
	spaces := map[string]catalog.Space{}
	var dyn catalog.DynamicKeys
	runID := "ext_" + ulid.Make().String()
	out := make([]db.Materialization, 0, len(items))
	seen := map[[3]string]int{} // (asset, partition, run id) → item: one instance each
	for i, it := range items {
		field := func(f string) string { return fmt.Sprintf("materializations[%d].%s", i, f) }
		fail := func(f, format string, args ...any) error {
			return BadRequest(field(f), "item %d (asset %q, partition %q): %s", i, it.Asset, it.Partition, fmt.Sprintf(format, args...))
		}
		itemReason := func(what string) string {
			return fmt.Sprintf("item %d (asset %q, partition %q): %s", i, it.Asset, it.Partition, what)
		}
		a := ws.Asset(it.Asset)
		if it.Asset == "" {
			return nil, fail("asset", "asset is required")
		}
		if a == nil {
			return nil, withHint(BadRequest(field("asset"), ""), itemReason("unknown asset"), HintAssetList, map[string]string{"asset": it.Asset})
		}
		sp, ok := spaces[a.Key]
		if !ok {
			if dyn == nil && hasDynamic(a.Scheme) {
				d, err := h.Store.LoadDynamicKeys(ctx)
				if err != nil {
					return nil, err
				}
				dyn = d
			}
			sp = a.Scheme.Space(now, dyn)
			spaces[a.Key] = sp
		}
		if it.Partition == "" {
			return nil, fail("partition", "partition is required")
		}
		idx, err := sp.Index(it.Partition)
		if err != nil {
			return nil, fail("partition", "%s", err.Error())
		}
		if it.Status != db.StatusMaterialized && it.Status != db.StatusFailed {
			return nil, fail("status", "status must be \"materialized\" or \"failed\", got %q", it.Status)
		}
		if it.Status == db.StatusMaterialized && it.Error != "" {
			return nil, fail("error", "error goes with status \"failed\": send status \"failed\" to report a failure, or leave error out to report a success")
		}
		if err := validText("error", "error", it.Error, 4000); err != nil {
			return nil, fail("error", "%s", err.(*UserError).Message)
		}
		at, started, err := reportTimes(it, now, fail)
		if err != nil {
			return nil, err
		}
		if err := checkReportMetadata(it, fail); err != nil {
			return nil, err
		}
		code := a.CodeVersion
		if it.CodeVersion != nil {
			if err := validLine("code_version", "code_version", *it.CodeVersion, maxReportID); err != nil {
				return nil, fail("code_version", "%s", err.(*UserError).Message)
			}
			code = *it.CodeVersion
		}
		rid := it.RunID
		if rid == "" {
			rid = runID
		} else if len(rid) > maxReportID {
			return nil, fail("run_id", "run_id is longer than %d characters", maxReportID)
		} else if err := validLine("run_id", "run_id", rid, maxReportID); err != nil {
			return nil, fail("run_id", "%s", err.(*UserError).Message)
		}
		k := [3]string{a.Key, it.Partition, rid}
		if j, ok := seen[k]; ok {
			return nil, fail("partition", "this partition is already reported by item %d with the same run; report each outcome of a partition once per run (give a later attempt its own run_id)", j)
		}
		seen[k] = i
		out = append(out, db.Materialization{AssetID: ws.IDs[a.Key], AssetKey: a.Key, Partition: it.Partition, Idx: idx,
			Status: it.Status, CodeVersion: code, Metadata: it.Metadata, Error: it.Error, RunID: rid, Source: "api", StartedAt: started, At: at})
	}
	return out, nil
}

// reportTimes is when a reported item was built (at; now when left out) and
// began (started_at; zero when left out).
func reportTimes(it MaterializationJSON, now time.Time, fail func(f, format string, args ...any) error) (time.Time, time.Time, error) {
	at := now
	if it.At != "" {
		t, err := time.Parse(time.RFC3339Nano, it.At)
		if err != nil {
			return time.Time{}, time.Time{}, fail("at", "at %q is not an RFC 3339 time such as 2025-01-31T12:00:00Z", it.At)
		}
		if t.After(now.Add(5 * time.Minute)) {
			return time.Time{}, time.Time{}, fail("at", "at %s is in the future", it.At)
		}
		at = t
	}
	var started time.Time
	if it.StartedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, it.StartedAt)
		if err != nil {
			return time.Time{}, time.Time{}, fail("started_at", "started_at %q is not an RFC 3339 time such as 2025-01-31T11:45:00Z", it.StartedAt)
		}
		if t.After(at) {
			return time.Time{}, time.Time{}, fail("started_at", "started_at %s is after at %s: send when the build began, no later than when it finished (at; now when left out)", it.StartedAt, at.UTC().Format(time.RFC3339Nano))
		}
		started = t
	}
	return at, started, nil
}

// checkReportMetadata refuses a reported item's metadata unless it is a
// portable JSON object under 16 KiB.
func checkReportMetadata(it MaterializationJSON, fail func(f, format string, args ...any) error) error {
	if len(it.Metadata) > 0 && string(it.Metadata) != "null" && !bytes.HasPrefix(bytes.TrimSpace(it.Metadata), []byte("{")) {
		return fail("metadata", "metadata must be a JSON object such as {\"rows\": 1200}")
	}
	if len(it.Metadata) > 16<<10 {
		return fail("metadata", "metadata is %d bytes; keep it under 16 KiB", len(it.Metadata))
	}
	if len(it.Metadata) > 0 && string(it.Metadata) != "null" {
		var m map[string]any
		if err := json.Unmarshal(it.Metadata, &m); err != nil {
			return fail("metadata", "metadata is not portable JSON (%s); numbers must fit a 64-bit float", jsonErr(err))
		}
	}
	return nil
}

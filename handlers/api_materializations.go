package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// MaxReportItems is the most materializations one request may report.
const MaxReportItems = 10000

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
}

// Actor names who is acting for events; the accounts layer sets it.
var Actor = func(c echo.Context) string { return "api" }

// decodeReport accepts one object, an array, or {"materializations": [...]}.
func decodeReport(body []byte) ([]MaterializationJSON, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, BadRequest("", "the request body is empty; send a JSON object or array of materializations")
	}
	var decodeErr *UserError
	strict := func(b []byte, v any) error {
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			decodeErr = decodeError(b, v, err)
			return err
		}
		if d.More() {
			return errors.New("unexpected data after the JSON value")
		}
		return nil
	}
	var items []MaterializationJSON
	var err error
	switch body[0] {
	case '[':
		err = strict(body, &items)
	case '{':
		if bytes.Contains(body, []byte(`"materializations"`)) {
			var wrap struct {
				Materializations []MaterializationJSON `json:"materializations"`
			}
			err = strict(body, &wrap)
			items = wrap.Materializations
		} else {
			var one MaterializationJSON
			err = strict(body, &one)
			items = []MaterializationJSON{one}
		}
	default:
		err = errors.New("expected a JSON object or array")
	}
	if decodeErr != nil {
		if strings.HasPrefix(decodeErr.Field, "[") { // a bare array: name it as the items are named
			decodeErr.Message = strings.Replace(decodeErr.Message, decodeErr.Field, "materializations"+decodeErr.Field, 1)
			decodeErr.Field = "materializations" + decodeErr.Field
		}
		return nil, decodeErr
	}
	if err != nil {
		return nil, BadRequest(jsonErrField(err), "the request body is not valid: %s", jsonErr(err))
	}
	return items, nil
}

// jsonErr rewrites encoding/json's messages into something a user can act on.
func jsonErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("the body must be %s, not a JSON %s", jsonKind(te.Type), te.Value)
		}
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && jsonKind(te.Type) == "an integer" && !strings.ContainsAny(n, ".eE") {
			return fmt.Sprintf("%s is out of range: %s", te.Field, n)
		}
		return fmt.Sprintf("%s must be %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, se.Error())
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// decodeError is the 400 for a body that did not decode into v (a pointer):
// an unknown field or a value of the wrong type is named by its full path,
// array indexes included (selector.keys[3]); anything else says what is
// wrong with the JSON.
func decodeError(body []byte, v any, err error) *UserError {
	if ue := unknownFieldError(body, v); ue != nil {
		return ue
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		segs := strings.Split(te.Field, ".")
		if path := typeErrorPath(body, reflect.TypeOf(v), segs, ""); path != "" && path != te.Field {
			te2 := *te
			te2.Field = path
			return BadRequest(path, "the request body is not valid: %s", jsonErr(&te2))
		}
	}
	return BadRequest(jsonErrField(err), "the request body is not valid: %s", jsonErr(err))
}

// typeErrorPath follows segs (a type error's dotted field) through raw and
// returns the path of the first value there that does not decode into its
// type, with the index of each array element on the way ("" if none).
func typeErrorPath(raw json.RawMessage, t reflect.Type, segs []string, prefix string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return prefix // not an array at all
		}
		for i, it := range items {
			if p := typeErrorPath(it, t.Elem(), segs, fmt.Sprintf("%s[%d]", prefix, i)); p != "" {
				return p
			}
		}
		return ""
	}
	if len(segs) == 0 {
		if t.Kind() == reflect.Map { // a type error's field stops at the map
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) != nil {
				return prefix
			}
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if p := typeErrorPath(obj[k], t.Elem(), nil, prefix+"."+k); p != "" {
					return p
				}
			}
			return ""
		}
		if json.Unmarshal(raw, reflect.New(t).Interface()) != nil {
			return prefix
		}
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	sub, ok := obj[segs[0]]
	if !ok {
		return ""
	}
	next := segs[0]
	if prefix != "" {
		next = prefix + "." + segs[0]
	}
	switch t.Kind() {
	case reflect.Map:
		return typeErrorPath(sub, t.Elem(), segs[1:], next)
	case reflect.Struct:
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == segs[0] || (name == "" && f.Name == segs[0]) {
				return typeErrorPath(sub, f.Type, segs[1:], next)
			}
		}
	}
	return ""
}

// jsonErrField is the JSON field a decoding error is about ("" when none).
func jsonErrField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	return ""
}

// unknownFieldError is the 400 for the first key of body that v (a pointer)
// has no field for, naming its path and the fields known there; nil when
// there is none.
func unknownFieldError(body []byte, v any) *UserError {
	path, known, ok := unknownField(body, reflect.TypeOf(v), "")
	if !ok {
		return nil
	}
	return BadRequest(path, "the request body is not valid: unknown field %q; the fields there are %s", path, strings.Join(known, ", "))
}

// unknownField finds the first object key in raw that type t has no field
// for, and returns its path (selector.from, items[2].x) and the fields known
// at that place. ok is false when there is none (or raw does not parse).
func unknownField(raw []byte, t reflect.Type, prefix string) (path string, known []string, ok bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return "", nil, false
		}
		fields := map[string]reflect.Type{}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = f.Type
			known = append(known, name)
		}
		keys := slices.Sorted(maps.Keys(obj))
		for _, k := range keys {
			if _, found := fields[k]; !found {
				return prefix + k, known, true
			}
		}
		for _, k := range keys {
			if p, kn, found := unknownField(obj[k], fields[k], prefix+k+"."); found {
				return p, kn, true
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return "", nil, false
		}
		for i, it := range items {
			if p, kn, found := unknownField(it, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(prefix, "."), i)); found {
				return p, kn, true
			}
		}
	}
	return "", nil, false
}

// jsonKind names what a JSON client must send for a Go type.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
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
	res, err := h.Store.RecordMaterializations(ctx, ms, Actor(c), c.Request().Header.Get("Idempotency-Key"), now)
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
	for i, it := range items {
		field := func(f string) string { return fmt.Sprintf("materializations[%d].%s", i, f) }
		fail := func(f, format string, args ...any) error {
			return BadRequest(field(f), "item %d (asset %q, partition %q): %s", i, it.Asset, it.Partition, fmt.Sprintf(format, args...))
		}
		a := ws.Asset(it.Asset)
		if it.Asset == "" {
			return nil, fail("asset", "asset is required")
		}
		if a == nil {
			return nil, fail("asset", "unknown asset; GET /api/v1/assets lists the declared assets")
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
		at := now
		if it.At != "" {
			t, err := time.Parse(time.RFC3339Nano, it.At)
			if err != nil {
				return nil, fail("at", "at %q is not an RFC 3339 time such as 2025-01-31T12:00:00Z", it.At)
			}
			if t.After(now.Add(5 * time.Minute)) {
				return nil, fail("at", "at %s is in the future", it.At)
			}
			at = t
		}
		if len(it.Metadata) > 0 && string(it.Metadata) != "null" && !bytes.HasPrefix(bytes.TrimSpace(it.Metadata), []byte("{")) {
			return nil, fail("metadata", "metadata must be a JSON object such as {\"rows\": 1200}")
		}
		if len(it.Metadata) > 16<<10 {
			return nil, fail("metadata", "metadata is %d bytes; keep it under 16 KiB", len(it.Metadata))
		}
		code := a.CodeVersion
		if it.CodeVersion != nil {
			code = *it.CodeVersion
		}
		rid := it.RunID
		if rid == "" {
			rid = runID
		} else if len(rid) > 200 {
			return nil, fail("run_id", "run_id is longer than 200 characters")
		}
		out = append(out, db.Materialization{AssetID: ws.IDs[a.Key], AssetKey: a.Key, Partition: it.Partition, Idx: idx,
			Status: it.Status, CodeVersion: code, Metadata: it.Metadata, Error: it.Error, RunID: rid, Source: "api", At: at})
	}
	return out, nil
}

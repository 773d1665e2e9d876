package handlers

import (
	"bytes"
	"encoding/json"
	"strings"
)

// publicPayload is an event's stored payload as the API answers it: times
// (Unix milliseconds in storage) as RFC 3339 strings like every other time
// in an answer, the backfill's assets and selector (stored as JSON text) as
// JSON values, and without the creator's Idempotency-Key and request hash,
// which only the creator's replays need.
func publicPayload(raw []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return json.RawMessage(raw)
	}
	out, err := json.Marshal(publicValue("", v))
	if err != nil {
		return json.RawMessage(raw)
	}
	return out
}

// privatePayloadFields are left out of event payloads in answers.
var privatePayloadFields = map[string]bool{"request_key": true, "request_hash": true}

// payloadTimeFields are the payload fields other than "at" and "…_at" that
// hold a time.
var payloadTimeFields = map[string]bool{"started": true, "finished": true, "not_before": true}

func publicValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if privatePayloadFields[k] {
				delete(x, k)
				continue
			}
			x[k] = publicValue(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = publicValue("", e)
		}
		return x
	case json.Number:
		if key == "at" || strings.HasSuffix(key, "_at") || payloadTimeFields[key] {
			if ms, err := x.Int64(); err == nil && ms > 0 {
				return msTime(ms)
			}
		}
		return x
	case string:
		if (key == "assets" || key == "selector") && (strings.HasPrefix(x, "[") || strings.HasPrefix(x, "{")) {
			var j any
			if err := json.Unmarshal([]byte(x), &j); err == nil {
				return j
			}
		}
		return x
	}
	return v
}

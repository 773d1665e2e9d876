package db

import (
	"encoding/json"
	"strconv"
)

// The attempts events carry every partition of their attempts (hundreds per
// controller step): eventJSON writes them byte for byte as json.Marshal
// does, without its reflection (about 0.5 s of CPU in a million-partition
// backfill). TestAttemptEventsJSON compares the two.

// eventJSON is the payload json.Marshal would write.
func (p AttemptsStarted) eventJSON() ([]byte, error) {
	b := make([]byte, 0, 256+40*partsIn(p.Attempts, func(a AttemptStart) int { return len(a.Parts) + len(a.UpstreamFailed) }))
	b = appendStr(append(b, '{'), "owner", p.Owner)
	b = append(b, `,"attempts":`...)
	b, err := appendEach(b, p.Attempts, func(b []byte, a AttemptStart) ([]byte, error) {
		b = appendAttemptHead(b, a.RunID, a.BackfillID, a.Attempt, a.AssetID, a.Asset)
		b = appendStr(append(b, ','), "code_version", a.CodeVersion)
		b, err := appendParts(b, "parts", a.Parts, true)
		if err == nil {
			b, err = appendParts(b, "upstream_failed", a.UpstreamFailed, false)
		}
		return append(b, '}'), err
	})
	return appendAt(b, p.At), err
}

// eventJSON is the payload json.Marshal would write.
func (p AttemptsFinished) eventJSON() ([]byte, error) {
	b := make([]byte, 0, 256+48*partsIn(p.Attempts, func(a AttemptEnd) int { return len(a.Parts) + len(a.Failures) }))
	b = append(b, `{"attempts":`...)
	b, err := appendEach(b, p.Attempts, func(b []byte, a AttemptEnd) ([]byte, error) {
		b = appendAttemptHead(b, a.RunID, a.BackfillID, a.Attempt, a.AssetID, a.Asset)
		b = appendStr(append(b, ','), "state", a.State)
		if a.Error != "" {
			b = appendStr(append(b, ','), "error", a.Error)
		}
		b, err := appendParts(b, "parts", a.Parts, true)
		if err != nil {
			return nil, err
		}
		b = appendStr(append(b, ','), "run_state", a.RunState)
		if a.NotBefore != 0 {
			b = appendInt(append(b, ','), "not_before", a.NotBefore)
		}
		if b, err = appendParts(b, "failures", a.Failures, false); err != nil {
			return nil, err
		}
		b = appendStr(append(b, ','), "code_version", a.CodeVersion)
		b = appendInt(append(b, ','), "started", a.Started)
		if a.Finished != 0 {
			b = appendInt(append(b, ','), "finished", a.Finished)
		}
		return append(b, '}'), nil
	})
	return appendAt(b, p.At), err
}

// appendAttemptHead opens an attempt's object with the fields every
// attempts event starts it with.
func appendAttemptHead(b []byte, runID, backfillID string, attempt, assetID int64, asset string) []byte {
	b = appendStr(append(b, '{'), "run_id", runID)
	b = appendStr(append(b, ','), "backfill_id", backfillID)
	b = appendInt(append(b, ','), "attempt", attempt)
	b = appendInt(append(b, ','), "asset_id", assetID)
	if asset != "" {
		b = appendStr(append(b, ','), "asset", asset)
	}
	return b
}

// appendParts writes ,"name":parts; a field that is omitempty (always
// false) is left out when parts is empty.
func appendParts(b []byte, name string, parts []PartRef, always bool) ([]byte, error) {
	if !always && len(parts) == 0 {
		return b, nil
	}
	b = append(append(append(b, `,"`...), name...), `":`...)
	return appendPartRefs(b, parts)
}

// appendEach writes items as a JSON array, each by one (null when nil).
func appendEach[T any](b []byte, items []T, one func([]byte, T) ([]byte, error)) ([]byte, error) {
	if items == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = one(b, it); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendStr writes "name":s; appendInt "name":n; appendAt closes an
// event's object with its "at".
func appendStr(b []byte, name, s string) []byte {
	return appendJSONString(append(append(append(b, '"'), name...), `":`...), s)
}

func appendInt(b []byte, name string, n int64) []byte {
	return strconv.AppendInt(append(append(append(b, '"'), name...), `":`...), n, 10)
}

func appendAt(b []byte, at int64) []byte { return append(appendInt(append(b, ','), "at", at), '}') }

// partsIn counts the partitions of attempts, to size a buffer.
func partsIn[T any](attempts []T, n func(T) int) int {
	total := 0
	for _, a := range attempts {
		total += n(a)
	}
	return total
}

// appendPartRefs appends parts as json.Marshal writes them (null when nil).
func appendPartRefs(b []byte, parts []PartRef) ([]byte, error) {
	return appendEach(b, parts, func(b []byte, pr PartRef) ([]byte, error) {
		if len(pr.Metadata) > 0 {
			// Metadata is compacted and escaped by encoding/json.
			q, err := json.Marshal(pr)
			return append(b, q...), err
		}
		b = appendStr(append(b, '{'), "k", pr.Key)
		b = appendInt(append(b, ','), "i", pr.Idx)
		for _, f := range [...]struct{ name, v string }{{"id", pr.InstanceID}, {"p", pr.Prev}, {"s", pr.Status}, {"e", pr.Error}} {
			if f.v != "" {
				b = appendStr(append(b, ','), f.name, f.v)
			}
		}
		if pr.Again {
			b = append(b, `,"a":true`...)
		}
		return append(b, '}'), nil
	})
}

// appendJSONString appends s as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	if plainJSON(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

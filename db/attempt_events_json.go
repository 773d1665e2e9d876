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
	b = append(b, `{"owner":`...)
	b = appendJSONString(b, p.Owner)
	b = append(b, `,"attempts":`...)
	if p.Attempts == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range p.Attempts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"run_id":`...)
			b = appendJSONString(b, a.RunID)
			b = append(b, `,"backfill_id":`...)
			b = appendJSONString(b, a.BackfillID)
			b = append(b, `,"attempt":`...)
			b = strconv.AppendInt(b, a.Attempt, 10)
			b = append(b, `,"asset_id":`...)
			b = strconv.AppendInt(b, a.AssetID, 10)
			if a.Asset != "" {
				b = append(b, `,"asset":`...)
				b = appendJSONString(b, a.Asset)
			}
			b = append(b, `,"code_version":`...)
			b = appendJSONString(b, a.CodeVersion)
			var err error
			b = append(b, `,"parts":`...)
			if b, err = appendPartRefs(b, a.Parts); err != nil {
				return nil, err
			}
			if len(a.UpstreamFailed) > 0 {
				b = append(b, `,"upstream_failed":`...)
				if b, err = appendPartRefs(b, a.UpstreamFailed); err != nil {
					return nil, err
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, p.At, 10)
	return append(b, '}'), nil
}

// eventJSON is the payload json.Marshal would write.
func (p AttemptsFinished) eventJSON() ([]byte, error) {
	b := make([]byte, 0, 256+48*partsIn(p.Attempts, func(a AttemptEnd) int { return len(a.Parts) + len(a.Failures) }))
	b = append(b, `{"attempts":`...)
	if p.Attempts == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range p.Attempts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"run_id":`...)
			b = appendJSONString(b, a.RunID)
			b = append(b, `,"backfill_id":`...)
			b = appendJSONString(b, a.BackfillID)
			b = append(b, `,"attempt":`...)
			b = strconv.AppendInt(b, a.Attempt, 10)
			b = append(b, `,"asset_id":`...)
			b = strconv.AppendInt(b, a.AssetID, 10)
			if a.Asset != "" {
				b = append(b, `,"asset":`...)
				b = appendJSONString(b, a.Asset)
			}
			b = append(b, `,"state":`...)
			b = appendJSONString(b, a.State)
			if a.Error != "" {
				b = append(b, `,"error":`...)
				b = appendJSONString(b, a.Error)
			}
			var err error
			b = append(b, `,"parts":`...)
			if b, err = appendPartRefs(b, a.Parts); err != nil {
				return nil, err
			}
			b = append(b, `,"run_state":`...)
			b = appendJSONString(b, a.RunState)
			if a.NotBefore != 0 {
				b = append(b, `,"not_before":`...)
				b = strconv.AppendInt(b, a.NotBefore, 10)
			}
			if len(a.Failures) > 0 {
				b = append(b, `,"failures":`...)
				if b, err = appendPartRefs(b, a.Failures); err != nil {
					return nil, err
				}
			}
			b = append(b, `,"code_version":`...)
			b = appendJSONString(b, a.CodeVersion)
			b = append(b, `,"started":`...)
			b = strconv.AppendInt(b, a.Started, 10)
			if a.Finished != 0 {
				b = append(b, `,"finished":`...)
				b = strconv.AppendInt(b, a.Finished, 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, p.At, 10)
	return append(b, '}'), nil
}

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
	if parts == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, pr := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		if len(pr.Metadata) > 0 {
			// Metadata is compacted and escaped by encoding/json.
			q, err := json.Marshal(pr)
			if err != nil {
				return nil, err
			}
			b = append(b, q...)
			continue
		}
		b = append(b, `{"k":`...)
		b = appendJSONString(b, pr.Key)
		b = append(b, `,"i":`...)
		b = strconv.AppendInt(b, pr.Idx, 10)
		if pr.InstanceID != "" {
			b = append(b, `,"id":`...)
			b = appendJSONString(b, pr.InstanceID)
		}
		if pr.Prev != "" {
			b = append(b, `,"p":`...)
			b = appendJSONString(b, pr.Prev)
		}
		if pr.Status != "" {
			b = append(b, `,"s":`...)
			b = appendJSONString(b, pr.Status)
		}
		if pr.Error != "" {
			b = append(b, `,"e":`...)
			b = appendJSONString(b, pr.Error)
		}
		if pr.Again {
			b = append(b, `,"a":true`...)
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendJSONString appends s as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	if plainJSON(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

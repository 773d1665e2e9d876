package db

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The attempts events list every partition of their attempts (hundreds of
// kilobytes at 100 attempts of 100 partitions). Their readers need a few
// fields of each attempt and its partitions' keys or their number:
// decoding them with encoding/json builds every partition's fields, which
// the pages watching a running backfill (its timeline, the staleness
// memo's following of the event log) paid on every new event. SkimAttempts
// reads the same fields by walking the bytes without building anything
// else; its callers fall back to encoding/json on a payload it cannot read
// (TestSkimmedEventTexts and TestSkimAttemptsKeys compare the two).

// SkimmedAttempt is what SkimAttempts reads of an attempt.
type SkimmedAttempt struct {
	RunID, State, RunState, Error string
	Attempt, AssetID              int64
	Parts                         int      // partitions in parts
	Keys                          []string // keys of parts, failures and upstream_failed (withKeys only)
	// Runs of consecutive indexes among parts, failures and
	// upstream_failed, in their order (skimRuns only); NoRuns when a
	// partition has no index or a key with escapes (then read its Keys).
	Runs   []PartRun
	NoRuns bool
}

// PartRun is a run of partitions with consecutive indexes Lo..Hi, listed
// one after the other in an attempt, and the keys of its first and last.
type PartRun struct {
	Lo, Hi      int64
	First, Last string
}

// skimMode is what SkimAttempts reads of the partitions.
type skimMode int

const (
	skimCount skimMode = iota // their number
	skimKeys                  // their keys
	skimRuns                  // runs of their indexes (PartRun)
)

// SkimAttempts reads the attempts of an attempts event's payload, calling
// attempt for each; with withKeys, each with the keys of its partitions.
// It returns false for a payload it cannot read.
func SkimAttempts(payload string, withKeys bool, attempt func(a SkimmedAttempt)) bool {
	mode := skimCount
	if withKeys {
		mode = skimKeys
	}
	return skimAttempts(payload, mode, attempt)
}

// SkimAttemptRuns is SkimAttempts with the runs of consecutive indexes of
// each attempt's partitions instead of their keys: a chunk of a backfill is
// one run, read without a string per partition (the staleness memo follows
// every attempts event of a running backfill).
func SkimAttemptRuns(payload string, attempt func(a SkimmedAttempt)) bool {
	return skimAttempts(payload, skimRuns, attempt)
}

func skimAttempts(payload string, mode skimMode, attempt func(a SkimmedAttempt)) bool {
	s := &skimmer{b: []byte(payload)}
	s.object(func(key []byte) {
		if string(key) != "attempts" {
			s.skip()
			return
		}
		s.array(func() {
			var a SkimmedAttempt
			s.object(func(key []byte) {
				switch string(key) {
				case "run_id":
					a.RunID = s.str()
				case "attempt":
					a.Attempt = s.int()
				case "asset_id":
					a.AssetID = s.int()
				case "state":
					a.State = s.str()
				case "run_state":
					a.RunState = s.str()
				case "error":
					a.Error = s.str()
				case "parts":
					a.Parts = s.refs(mode, &a)
				case "failures", "upstream_failed":
					if mode != skimCount {
						s.refs(mode, &a)
					} else {
						s.skip()
					}
				default:
					s.skip()
				}
			})
			if !s.bad {
				attempt(a)
			}
		})
	})
	if s.peek() != 0 {
		s.bad = true
	}
	return !s.bad
}

// refs reads an array of partition references, appending to a their keys
// (skimKeys) or runs (skimRuns), and returns how many it holds.
func (s *skimmer) refs(mode skimMode, a *SkimmedAttempt) int {
	switch mode {
	case skimCount:
		return s.count()
	case skimRuns:
		return s.runs(a)
	}
	n := 0
	s.array(func() {
		n++
		s.object(func(key []byte) {
			if string(key) == "k" {
				a.Keys = append(a.Keys, s.str())
				return
			}
			s.skip()
		})
	})
	return n
}

// runs reads an array of partition references into a.Runs: a reference
// whose index follows the last one's extends its run. The keys are kept as
// bytes of the payload but for the first and last of each run.
func (s *skimmer) runs(a *SkimmedAttempt) int {
	n := 0
	var last []byte
	s.array(func() {
		n++
		var key []byte
		idx, hasKey, hasIdx := int64(0), false, false
		s.object(func(field []byte) {
			switch string(field) {
			case "k":
				s.space()
				raw, escaped := s.rawString()
				key, hasKey = raw, !escaped
			case "i":
				idx, hasIdx = s.int(), true
			default:
				s.skip()
			}
		})
		if s.bad || a.NoRuns {
			return
		}
		if !hasKey || !hasIdx || idx < 0 {
			a.NoRuns, a.Runs = true, nil
			return
		}
		if r := len(a.Runs) - 1; r >= 0 && last != nil && a.Runs[r].Hi+1 == idx {
			a.Runs[r].Hi = idx
			last = key
			return
		}
		if r := len(a.Runs) - 1; r >= 0 && last != nil {
			a.Runs[r].Last = string(last)
		}
		a.Runs = append(a.Runs, PartRun{Lo: idx, Hi: idx, First: string(key)})
		last = key
	})
	if r := len(a.Runs) - 1; r >= 0 && last != nil && !a.NoRuns {
		a.Runs[r].Last = string(last)
	}
	return n
}

// skimmer walks a JSON text; bad is set at the first byte it cannot read
// (the caller then decodes the text with encoding/json instead).
type skimmer struct {
	b   []byte
	i   int
	bad bool
}

func (s *skimmer) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space (0 at the end).
func (s *skimmer) peek() byte {
	s.space()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *skimmer) expect(c byte) {
	if s.peek() != c {
		s.bad = true
		return
	}
	s.i++
}

// rawString reads a string and returns its bytes between the quotes, still
// escaped, and whether it has escapes.
func (s *skimmer) rawString() (raw []byte, escaped bool) {
	s.expect('"')
	if s.bad {
		return nil, false
	}
	start := s.i
	for {
		j := bytes.IndexAny(s.b[s.i:], `"\`)
		if j < 0 {
			s.bad = true
			return nil, false
		}
		s.i += j
		if s.b[s.i] == '"' {
			s.i++
			return s.b[start : s.i-1], escaped
		}
		escaped = true
		s.i += 2 // the backslash and the byte it escapes (\uXXXX: the rest are plain)
		if s.i > len(s.b) {
			s.bad = true
			return nil, false
		}
	}
}

// str reads a string value.
func (s *skimmer) str() string {
	s.space()
	start := s.i
	raw, escaped := s.rawString()
	if s.bad {
		return ""
	}
	if !escaped {
		return string(raw)
	}
	var out string
	if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
		s.bad = true
	}
	return out
}

// int reads an integer value.
func (s *skimmer) int() int64 {
	s.space()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
		s.i++
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		s.bad = true
	}
	return n
}

// skip passes over one value of any kind.
func (s *skimmer) skip() {
	switch s.peek() {
	case '"':
		s.rawString()
	case '{':
		s.object(func([]byte) { s.skip() })
	case '[':
		s.array(s.skip)
	case 0:
		s.bad = true
	default: // a number, true, false or null
		start := s.i
		for s.i < len(s.b) && !endsValue(s.b[s.i]) {
			s.i++
		}
		if s.i == start {
			s.bad = true
		}
	}
}

// endsValue says whether c ends a number or a literal.
func endsValue(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// object reads an object, calling field with each key (unescaped keys
// only: none of ours is escaped); field reads the key's value.
func (s *skimmer) object(field func(key []byte)) {
	s.expect('{')
	if s.peek() == '}' {
		s.i++
		return
	}
	for !s.bad {
		key, escaped := s.rawString()
		if escaped {
			s.bad = true
		}
		s.expect(':')
		if s.bad {
			return
		}
		field(key)
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.bad = true
		}
	}
}

// array reads an array (null reads as empty), calling elem for each
// element, which reads it.
func (s *skimmer) array(elem func()) {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return
	}
	s.expect('[')
	if s.peek() == ']' {
		s.i++
		return
	}
	for !s.bad {
		elem()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return
		default:
			s.bad = true
		}
	}
}

// count reads an array and returns its number of elements.
func (s *skimmer) count() int {
	n := 0
	s.array(func() { n++; s.skip() })
	return n
}

package cli

import (
	"testing"
	"time"
)

// Off a terminal, a --wait prints a line when it changed (at most one per
// plainEvery), the same line again after plainHeartbeat of silence (so a
// CI job that kills silent jobs sees it alive), and the last line.
func TestPlainLinesChangeAndHeartbeat(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p plainLines
	steps := []struct {
		key   string
		after time.Duration
		final bool
		want  bool
	}{
		{"a", 0, false, true},                                          // the first line
		{"a", time.Second, false, false},                               // unchanged
		{"b", time.Second, false, false},                               // changed, but too soon
		{"b", plainEvery, false, true},                                 // changed
		{"b", plainEvery + 30*time.Second, false, false},               // unchanged, not yet silent long
		{"b", plainEvery + plainHeartbeat, false, true},                // heartbeat
		{"b", plainEvery + plainHeartbeat + time.Second, true, false},  // last line, already printed
		{"c", plainEvery + plainHeartbeat + 2*time.Second, true, true}, // last line, new
	}
	for i, s := range steps {
		if got := p.due(s.key, t0.Add(s.after), s.final); got != s.want {
			t.Errorf("step %d (%q at %v, final %v): due %v, want %v", i, s.key, s.after, s.final, got, s.want)
		}
	}
}

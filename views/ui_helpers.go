package views

import (
	"context"
	"io"
	"strings"

	"github.com/a-h/templ"
)

// counted is "1 partition", "2 partitions", "3 matches", with thousands
// separators.
func counted(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	if strings.HasSuffix(unit, "ch") || strings.HasSuffix(unit, "s") {
		return Num(n) + " " + unit + "es"
	}
	return Num(n) + " " + unit + "s"
}

// stripCaption says what a bucket strip draws. Neighbouring buckets of one
// equal status are merged, so a bar is either a merged run of one status
// or a single bucket of mixed statuses: the caption counts the bars and
// names the longest, in the strip's unit (partitions, or chunks on a
// backfill page). "Runs" would read as job runs, which they are not, and
// "stretches" was a word of ours, not the reader's.
func stripCaption(g Grid) string {
	unit := g.Unit
	if unit == "" {
		unit = "partition"
	}
	var longest int64
	for _, b := range g.Buckets {
		longest = max(longest, b.Bar.Total)
	}
	n := int64(len(g.Buckets))
	var s strings.Builder
	s.WriteString(counted(g.Total, unit))
	s.WriteString(" drawn as ")
	s.WriteString(counted(n, "bar"))
	if n > 1 {
		s.WriteString(", the longest " + counted(longest, unit))
	}
	if n == 1 {
		s.WriteString(". Click it to ")
	} else {
		s.WriteString(". Click a bar to ")
	}
	if g.Unit == "chunk" {
		s.WriteString("list its chunks.")
	} else {
		s.WriteString("zoom in.")
	}
	return s.String()
}

// untitled reports whether a backfill row's title is only the generated
// "Backfill <id>" (its id is then not repeated under it).
func untitled(r BackfillRow) bool { return r.Title == "" || r.Title == "Backfill "+r.ID }

// longLabels reports whether any column label is wider than two characters
// (matrix dimension values such as "apac"): such headers are set vertically,
// one column wide, instead of running into each other.
func longLabels(ls []string) bool {
	for _, l := range ls {
		if len([]rune(l)) > 2 {
			return true
		}
	}
	return false
}

// breakAtDots writes an asset key with a line-break opportunity (<wbr>) after
// each dot: a narrow column breaks "analytics.daily_events" after the dot,
// never inside a word.
func breakAtDots(key string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		for i, p := range dotParts(key) {
			if i > 0 {
				if _, err := io.WriteString(w, "<wbr>"); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(w, templ.EscapeString(p)); err != nil {
				return err
			}
		}
		return nil
	})
}

// dotParts splits an asset key after each dot ("analytics.", "daily_events").
func dotParts(key string) []string {
	var out []string
	for {
		i := strings.IndexByte(key, '.')
		if i < 0 || i == len(key)-1 {
			return append(out, key)
		}
		out = append(out, key[:i+1])
		key = key[i+1:]
	}
}

// barFailed is how many of a backfill bar's partitions failed (or were
// skipped for a failed upstream).
func barFailed(b Bar) int64 {
	var n int64
	for _, s := range b.Segs {
		if s.Status == "failed" {
			n += s.N
		}
	}
	return n
}

// barDone is how many partitions of a backfill's progress bar are done:
// built or failed (the backfill page's "% done" counts the same).
func barDone(b Bar) int64 {
	var n int64
	for _, s := range b.Segs {
		if s.Status == "materialized" || s.Status == "failed" {
			n += s.N
		}
	}
	return n
}

// placeholderOf is the first of choices as an example, or region=eu.
func placeholderOf(choices []string) string {
	if len(choices) > 0 {
		return choices[0]
	}
	return "region=eu"
}

// itsTheir is "its" for one, "their" for more.
func itsTheir(n int64) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

// isAre is "is" for one, "are" for more.
func isAre(n int64) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

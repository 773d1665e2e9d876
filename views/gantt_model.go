package views

// Gantt is a backfill's chunk timeline: when each chunk's attempts ran, on
// how many slots at once. With few attempts (Mode "chunks") each is a bar
// on a lane (one lane per slot in use at once) that links to its run; with
// many (Mode "buckets") time is cut into columns and each column stacks how
// many slots were busy on average, by outcome, so that the drawing stays
// the same size for ten thousand chunks.
type Gantt struct {
	Href          string // the partial that redraws it
	RunsHref      string // the runs list of this backfill
	Live          bool
	Lazy          bool // not drawn yet: the page loads it from Href at once
	Empty         bool
	Mode          string // "chunks" or "buckets"
	Width, Height int    // of the drawing (viewBox units)
	Attempts      int    // attempts drawn
	Peak          int    // most attempts running at once
	Lanes         []GanttLane
	Bars          []GanttBar
	Start, End    string // the times at the left and right edges
	Span          string // how long that is
	Bucket        string // how long one column is (buckets mode)
}

// GanttLane is a slot's horizontal line and label (chunks mode) or a slot
// count's line (buckets mode).
type GanttLane struct {
	Y     int
	Label string
}

// GanttBar is one rectangle: an attempt (Href its run) or a column's part.
type GanttBar struct {
	X, Y, W, H float64
	Class      string
	Title      string
	Href       string
	Chunk      int64 // chunks mode: the chunk
	Lane       int   // chunks mode: the slot it ran on
}

func ganttLabel(g Gantt) string {
	return "When each chunk ran, " + g.Start + " to " + g.End + ": " + ganttCaption(g)
}

func ganttCaption(g Gantt) string {
	s := Num(int64(g.Attempts)) + plural(int64(g.Attempts), " attempt", " attempts") + " over " + g.Span + ", at most " +
		Num(int64(g.Peak)) + plural(int64(g.Peak), " slot", " slots") + " at once"
	if g.Mode == "buckets" {
		s += "; each column is " + g.Bucket + ", its height the slots busy on average"
	} else {
		s += "; one lane per slot, each bar a chunk's attempt (click to open its run)"
	}
	return s
}

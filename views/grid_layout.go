package views

import (
	"strconv"
)

type stripRect struct {
	Status     string
	X, Y, W, H string
}

type bucketShape struct {
	Href, Title string
	Current     bool
	Rects       []stripRect
}

const bucketUnit = 10

func stripWidth(g Grid) int {
	n := 0
	for _, b := range g.Buckets {
		n += max(b.Span, 1)
	}
	return max(n*bucketUnit, bucketUnit)
}

// bucketShapes lays out buckets left to right, each a stack of status
// segments (bottom-up in legend order) proportional to its counts.
func bucketShapes(g Grid) []bucketShape {
	out := make([]bucketShape, 0, len(g.Buckets))
	x := 0
	for _, b := range g.Buckets {
		w := max(b.Span, 1) * bucketUnit
		s := bucketShape{Href: b.Href, Title: b.Title, Current: b.Current}
		y := 40.0
		for _, seg := range b.Bar.Segs {
			if seg.N <= 0 || b.Bar.Total <= 0 {
				continue
			}
			h := float64(seg.N) * 40 / float64(b.Bar.Total)
			y -= h
			s.Rects = append(s.Rects, stripRect{seg.Status, strconv.Itoa(x), ftoa(y), strconv.Itoa(w - 1), ftoa(h)})
		}
		out = append(out, s)
		x += w
	}
	return out
}

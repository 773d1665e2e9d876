package handlers

import (
	"time"

	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// estimateOf is p's duration estimate for the views: its figures as
// durations and what they rest on.
func estimateOf(p *jobs.Preview) views.Estimate {
	b := p.Basis
	e := views.Estimate{Assets: b.Assets, NoHistory: b.NoHistory, FromReports: b.FromReports, ChunkSize: b.ChunkSize}
	for _, s := range b.Sizes {
		e.Sizes = append(e.Sizes, views.RunSize{Asset: s.Asset, PartitionsARun: s.PartitionsARun})
	}
	switch {
	case p.EstimateRange != nil:
		e.Low, e.High = seconds(p.EstimateRange[0]), seconds(p.EstimateRange[1])
	case p.EstimateSeconds != nil:
		e.Low = seconds(*p.EstimateSeconds)
	}
	return e
}

func seconds(s float64) string { return fmtDur(time.Duration(s * float64(time.Second))) }

// wordEstimate sets the API's estimate in words of p (nil: none), as the
// pages word it. A preview that has its words already (a sensor's dry run
// recorded before evaluations kept the estimate's basis) keeps them.
func wordEstimate(p *jobs.Preview) {
	if p != nil && p.Estimate == "" {
		p.Estimate = views.EstimateText(estimateOf(p))
	}
}

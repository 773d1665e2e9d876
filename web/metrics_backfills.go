package web

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tessera-dev/tessera/db"
)

// backfillCollector reads the backfill engine's state from the store when
// Prometheus scrapes (db.EngineTotals): it needs no hook in the engine and is
// right after a restart.
type backfillCollector struct {
	store                                   *db.Store
	backfills, runsActive, runs, partitions *prometheus.Desc
}

func newBackfillCollector(store *db.Store) *backfillCollector {
	return &backfillCollector{
		store: store,
		backfills: prometheus.NewDesc("tessera_backfills", "Backfills by state.",
			[]string{"state"}, nil),
		runsActive: prometheus.NewDesc("tessera_runs_active", "Chunk runs queued or running.",
			[]string{"state"}, nil),
		runs: prometheus.NewDesc("tessera_backfill_runs_finished_total", "Chunk runs finished, by final state, over every backfill.",
			[]string{"state"}, nil),
		partitions: prometheus.NewDesc("tessera_backfill_partitions_finished_total", "Partitions backfills finished, by outcome.",
			[]string{"outcome"}, nil),
	}
}

func (b *backfillCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.backfills
	ch <- b.runsActive
	ch <- b.runs
	ch <- b.partitions
}

func (b *backfillCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := b.store.EngineTotals(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(b.backfills, err)
		return
	}
	for _, m := range []struct {
		desc *prometheus.Desc
		kind prometheus.ValueType
		vals map[string]int64
	}{{b.backfills, prometheus.GaugeValue, t.Backfills}, {b.runsActive, prometheus.GaugeValue, t.ActiveRuns},
		{b.runs, prometheus.CounterValue, t.Runs}, {b.partitions, prometheus.CounterValue, t.Partitions}} {
		for label, n := range m.vals {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(n), label)
		}
	}
}

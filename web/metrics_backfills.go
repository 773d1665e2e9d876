package web

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tessera-dev/tessera/db"
)

// backfillCollector reads the backfill engine's state from the store when
// Prometheus scrapes: it needs no hook in the engine and is right after a
// restart. Every query reads the small backfills table or the partial index
// of active runs, so a scrape stays cheap however many partitions there are.
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
	byState := map[string]float64{}
	for _, s := range db.BackfillStates {
		byState[s] = 0
	}
	var rows []struct {
		State string `db:"state"`
		N     int64  `db:"n"`
	}
	if err := b.store.R.SelectContext(ctx, &rows, `SELECT state, COUNT(*) AS n FROM backfills GROUP BY state`); err != nil {
		ch <- prometheus.NewInvalidMetric(b.backfills, err)
		return
	}
	for _, r := range rows {
		byState[r.State] = float64(r.N)
	}
	for s, n := range byState {
		ch <- prometheus.MustNewConstMetric(b.backfills, prometheus.GaugeValue, n, s)
	}
	active := map[string]float64{db.RunQueued: 0, db.RunRunning: 0}
	rows = rows[:0]
	if err := b.store.R.SelectContext(ctx, &rows, `SELECT state, COUNT(*) AS n FROM runs WHERE state IN ('queued', 'running') GROUP BY state`); err != nil {
		ch <- prometheus.NewInvalidMetric(b.runsActive, err)
		return
	}
	for _, r := range rows {
		active[r.State] = float64(r.N)
	}
	for s, n := range active {
		ch <- prometheus.MustNewConstMetric(b.runsActive, prometheus.GaugeValue, n, s)
	}
	var t struct {
		Succeeded, Failed, Canceled, Mat, PFailed, PUp int64
	}
	if err := b.store.R.QueryRowContext(ctx, `SELECT COALESCE(SUM(runs_succeeded), 0), COALESCE(SUM(runs_failed), 0), COALESCE(SUM(runs_canceled), 0),
		COALESCE(SUM(partitions_materialized), 0), COALESCE(SUM(partitions_failed), 0), COALESCE(SUM(partitions_upstream_failed), 0) FROM backfills`).
		Scan(&t.Succeeded, &t.Failed, &t.Canceled, &t.Mat, &t.PFailed, &t.PUp); err != nil {
		ch <- prometheus.NewInvalidMetric(b.runs, err)
		return
	}
	for s, n := range map[string]int64{db.RunSucceeded: t.Succeeded, db.RunFailed: t.Failed, db.RunCanceled: t.Canceled} {
		ch <- prometheus.MustNewConstMetric(b.runs, prometheus.CounterValue, float64(n), s)
	}
	for o, n := range map[string]int64{"materialized": t.Mat, "failed": t.PFailed, "upstream_failed": t.PUp} {
		ch <- prometheus.MustNewConstMetric(b.partitions, prometheus.CounterValue, float64(n), o)
	}
}

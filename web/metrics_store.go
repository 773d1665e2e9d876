package web

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tessera-dev/tessera/db"
)

// storeCollector reports the writes the database refused, by cause
// (db.Store.WriteFailures), and whether writes fail now.
type storeCollector struct {
	store             *db.Store
	failures, failing *prometheus.Desc
	readWrites        *prometheus.Desc
}

func newStoreCollector(store *db.Store) *storeCollector {
	return &storeCollector{
		store: store,
		failures: prometheus.NewDesc("tessera_db_write_failures_total",
			"Writes the database refused, by cause (disk_full, locked, read_only, io_error); the command wrote nothing.", []string{"cause"}, nil),
		failing: prometheus.NewDesc("tessera_db_write_failing",
			"1 while the database cannot be written (since the last refused write, until a probe write succeeds), else 0.", nil, nil),
		readWrites: prometheus.NewDesc("tessera_db_writer_uses_by_reads_total",
			"Uses of the database writer on behalf of GET and HEAD requests (0: reads never queue behind the backfill engine for the one writer connection).", nil, nil),
	}
}

func (s *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.failures
	ch <- s.failing
	ch <- s.readWrites
}

func (s *storeCollector) Collect(ch chan<- prometheus.Metric) {
	for cause, n := range s.store.WriteFailures() {
		ch <- prometheus.MustNewConstMetric(s.failures, prometheus.CounterValue, float64(n), string(cause))
	}
	v := 0.0
	if s.store.WriteHealth().Failing {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(s.failing, prometheus.GaugeValue, v)
	ch <- prometheus.MustNewConstMetric(s.readWrites, prometheus.CounterValue, float64(s.store.WriterUsesByReads()))
}

package cli

import (
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/web"
)

// metricsFlags say who may scrape /metrics.
type metricsFlags struct {
	Addr   string
	Public bool
	public *envBoolValue
}

func addMetricsFlags(cmd *cobra.Command, m *metricsFlags) {
	cmd.Flags().StringVar(&m.Addr, "metrics-addr", envOr("TESSERA_METRICS_ADDR", ""),
		"serve /metrics on this HOST:PORT of its own, to anyone who reaches it, and not on --addr (env TESSERA_METRICS_ADDR); without it /metrics needs a viewer token or session")
	m.public = envBoolFlag(cmd, &m.Public, "metrics-public", "TESSERA_METRICS_PUBLIC",
		"serve /metrics on --addr to anyone, without a token (env TESSERA_METRICS_PUBLIC: 1/0, true/false, yes/no, on/off)")
}

// settings checks the metrics flags against the main listen address.
func (m metricsFlags) settings(addr string) (web.Options, error) {
	var o web.Options
	if err := m.public.check(); err != nil {
		return o, err
	}
	if m.Addr != "" {
		if err := checkListenAddr("--metrics-addr", m.Addr); err != nil {
			return o, err
		}
		if m.Addr == addr {
			return o, usageErr("--metrics-addr %q is --addr too; give the metrics a listener of their own (another port), or leave --metrics-addr out to serve /metrics on --addr to viewers", m.Addr)
		}
		if m.Public {
			return o, usageErr("--metrics-public and --metrics-addr exclude each other: with --metrics-addr, /metrics is served only on that listener (to anyone who reaches it); drop one of them")
		}
	}
	o.MetricsPublic, o.MetricsElsewhere = m.Public, m.Addr != ""
	return o, nil
}

// serveMetrics answers /metrics (and nothing else) on ln, in plain HTTP; a
// failure to serve is sent to errc.
func serveMetrics(ln net.Listener, metrics http.Handler, errc chan<- error) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET "+web.MetricsPath, metrics)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != http.ErrServerClosed {
			select {
			case errc <- err:
			default:
			}
		}
	}()
	return srv
}

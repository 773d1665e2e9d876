package cli

import (
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

// streamFlags bound the live pages' event streams.
type streamFlags struct {
	Total, PerSession int
}

func addStreamFlags(cmd *cobra.Command, f *streamFlags) {
	fs := cmd.Flags()
	fs.IntVar(&f.Total, "max-streams", handlers.DefaultMaxStreams, "live-update event streams open at once, in all; at least 1 (env TESSERA_MAX_STREAMS)")
	fs.IntVar(&f.PerSession, "max-streams-per-session", handlers.DefaultMaxStreamsPerPrincipal, "live-update event streams one session, API token or (without either) address may hold; at least 1 (env TESSERA_MAX_STREAMS_PER_SESSION)")
}

// streamSettings are the validated stream bounds.
type streamSettings struct{ total, perSession int }

// settings validates the stream flags, falling back to the environment for
// a flag not given; a flag beats its variable.
func (f streamFlags) settings(changed func(string) bool) (streamSettings, error) {
	s := streamSettings{f.Total, f.PerSession}
	for _, it := range []struct {
		flag, env string
		v         *int
	}{{"max-streams", "TESSERA_MAX_STREAMS", &s.total}, {"max-streams-per-session", "TESSERA_MAX_STREAMS_PER_SESSION", &s.perSession}} {
		if !changed(it.flag) {
			if v := os.Getenv(it.env); v != "" {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 1 {
					return s, usageErr("%s must be a positive number, got %q", it.env, v)
				}
				*it.v = n
			}
		} else if *it.v < 1 {
			return s, usageErr("--%s must be a positive number, got %d", it.flag, *it.v)
		}
	}
	if s.perSession > s.total {
		return s, usageErr("--max-streams-per-session (%d) is more than --max-streams (%d): one session could hold every stream; lower it or raise --max-streams", s.perSession, s.total)
	}
	return s, nil
}

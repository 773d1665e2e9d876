package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/web"
)

// streamFlags bound the live pages' event streams.
type streamFlags struct {
	Total, PerUser int
	// ReadSlots is --read-slots: page and API reads computed at once.
	ReadSlots int
	// ReadNice is --read-nice: how much lower in priority they compute.
	ReadNice int
	// PerSession is --max-streams-per-session, the old name of
	// --max-streams-per-user (the bound was per session and per token, so
	// more tokens or sign-ins were more streams); kept as a deprecated alias.
	PerSession int
}

func addStreamFlags(cmd *cobra.Command, f *streamFlags) {
	fs := cmd.Flags()
	fs.IntVar(&f.Total, "max-streams", handlers.DefaultMaxStreams, "live-update event streams open at once, in all; at least 1 (env TESSERA_MAX_STREAMS)")
	fs.IntVar(&f.PerUser, "max-streams-per-user", handlers.DefaultMaxStreamsPerUser, "live-update event streams one user (all its browser sessions and API tokens together) or, for anonymous viewers, one address may hold; at least 1 (env TESSERA_MAX_STREAMS_PER_USER)")
	fs.IntVar(&f.PerSession, "max-streams-per-session", handlers.DefaultMaxStreamsPerUser, "old name of --max-streams-per-user")
	_ = fs.MarkDeprecated("max-streams-per-session", "use --max-streams-per-user (the bound is per user)")
	fs.IntVar(&f.ReadSlots, "read-slots", 0, "page and API reads computed at once; more wait their turn, so that readers leave the backfill engine a core; 0 = one fewer than the cores (at least 1) (env TESSERA_READ_SLOTS)")
	fs.IntVar(&f.ReadNice, "read-nice", web.DefaultReadNice, fmt.Sprintf("how much lower the priority of the threads page and API reads compute on is than the server's (a nice increment, 0 to %d, Linux only), so that a running backfill keeps its speed beside many readers; 0 = the same priority (env TESSERA_READ_NICE)", web.MaxReadNice))
}

// streamSettings are the validated stream bounds (and the reads' slots and
// priority).
type streamSettings struct{ total, perUser, readSlots, readNice int }

// settings validates the stream flags, falling back to the environment for
// a flag not given; a flag beats its variable. The per-user bound may be
// given by its old names (--max-streams-per-session,
// TESSERA_MAX_STREAMS_PER_SESSION) when the new ones are not.
func (f streamFlags) settings(changed func(string) bool) (streamSettings, error) {
	s := streamSettings{f.Total, f.PerUser, f.ReadSlots, f.ReadNice}
	readSlots := serveSetting[int]{flag: "read-slots", env: "TESSERA_READ_SLOTS", parse: strconv.Atoi, ok: func(n int) bool { return n >= 0 },
		envWant: "a whole number, 0 or more (0 = one fewer than the cores)", flagWant: "0 or more (0 = one fewer than the cores)"}
	var err error
	if s.readSlots, err = readSlots.value(changed, f.ReadSlots); err != nil {
		return s, err
	}
	nice := fmt.Sprintf("0 to %d (0 = the engine's priority)", web.MaxReadNice)
	readNice := serveSetting[int]{flag: "read-nice", env: "TESSERA_READ_NICE", parse: strconv.Atoi, ok: func(n int) bool { return n >= 0 && n <= web.MaxReadNice },
		envWant: "a whole number, " + nice, flagWant: nice}
	if s.readNice, err = readNice.value(changed, f.ReadNice); err != nil {
		return s, err
	}
	perFlag, perEnv := "max-streams-per-user", "TESSERA_MAX_STREAMS_PER_USER"
	if !changed(perFlag) {
		switch {
		case changed("max-streams-per-session"):
			perFlag, s.perUser = "max-streams-per-session", f.PerSession
		case os.Getenv(perEnv) == "" && os.Getenv("TESSERA_MAX_STREAMS_PER_SESSION") != "":
			perEnv = "TESSERA_MAX_STREAMS_PER_SESSION"
		}
	}
	if s.total, err = positiveInt("max-streams", "TESSERA_MAX_STREAMS").value(changed, s.total); err != nil {
		return s, err
	}
	if s.perUser, err = positiveInt(perFlag, perEnv).value(changed, s.perUser); err != nil {
		return s, err
	}
	if s.perUser > s.total {
		return s, usageErr("--%s (%d) is more than --max-streams (%d): one user could hold every stream; lower it or raise --max-streams", perFlag, s.perUser, s.total)
	}
	return s, nil
}

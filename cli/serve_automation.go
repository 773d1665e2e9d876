package cli

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/jobs"
)

// automationFlags configure schedules and sensors.
type automationFlags struct {
	Retention string
}

// minRetention is the shortest history retention serve accepts: shorter
// would prune ticks and evaluations nearly as they are written.
const minRetention = time.Hour

func addAutomationFlags(cmd *cobra.Command, f *automationFlags) {
	cmd.Flags().StringVar(&f.Retention, "automation-retention", catalog.FormatDuration(jobs.DefaultAutomationRetention),
		"how long schedule ticks, sensor evaluations and pushed events are kept before they are pruned (counts kept): a duration such as 90d or 36h, at least 1h (env TESSERA_AUTOMATION_RETENTION)")
}

// retention validates --automation-retention, falling back to
// TESSERA_AUTOMATION_RETENTION when the flag is not given (changed reports
// whether it was); a flag beats its variable, both are checked alike.
func (f automationFlags) retention(changed func(string) bool) (time.Duration, error) {
	name, v := "--automation-retention", f.Retention
	if !changed("automation-retention") {
		if env := os.Getenv("TESSERA_AUTOMATION_RETENTION"); env != "" {
			name, v = "TESSERA_AUTOMATION_RETENTION", env
		}
	}
	const how = "give how long to keep schedule ticks, sensor evaluations and pushed events, at least 1h: for example 90d (the default), 30d or 36h"
	d, err := catalog.ParseDuration(strings.TrimSpace(v))
	switch {
	case err != nil:
		return 0, usageErr("%s: %v; %s", name, err, how)
	case d == 0:
		return 0, usageErr("%s %q would prune history as soon as it is written; %s", name, v, how)
	case d < minRetention:
		return 0, usageErr("%s %q is shorter than 1h: ticks and evaluations would be pruned almost as they are recorded; %s", name, v, how)
	}
	return d, nil
}

package jobs

import (
	"context"
	"log/slog"
)

// spell says a spell of failures of one of the engine's recurring tasks
// (the heartbeat, the ask for the schedules' lease, the workspace
// comparison) once: a warning at its first failure, a line when the task
// works again. While the database is down each task fails at every turn,
// and saying each failure flooded the log.
type spell struct {
	failing bool
}

// note records the outcome of one turn: err, its failure (nothing is said
// once ctx has ended); failed and again are what the log says.
func (s *spell) note(ctx context.Context, log *slog.Logger, err error, failed, again string) {
	switch {
	case err != nil && ctx.Err() == nil && !s.failing:
		log.Warn(failed, "err", oneLine(err))
		s.failing = true
	case err == nil && s.failing:
		log.Info(again)
		s.failing = false
	}
}

package handlers

import "github.com/tessera-dev/tessera/db"

// skimmedEventText is eventText of an attempts event read by skimming its
// payload (db.SkimAttempts: no partition built), and false for any other
// event or a payload it cannot read.
func skimmedEventText(e db.Event) (string, bool) {
	switch e.Type {
	case db.EvAttemptsStarted:
		var attempts []db.AttemptStart
		var parts int
		ok := db.SkimAttempts(e.Payload, false, func(a db.SkimmedAttempt) {
			if len(attempts) == 0 {
				attempts = append(attempts, db.AttemptStart{RunID: a.RunID, Attempt: a.Attempt})
			} else {
				attempts = append(attempts, db.AttemptStart{})
			}
			parts += a.Parts
		})
		if !ok {
			return "", false
		}
		return attemptsStartedText(attempts, parts), true
	case db.EvAttemptsFinished:
		var p db.AttemptsFinished
		ok := db.SkimAttempts(e.Payload, false, func(a db.SkimmedAttempt) {
			p.Attempts = append(p.Attempts, db.AttemptEnd{State: a.State, RunState: a.RunState, Error: a.Error})
		})
		if !ok {
			return "", false
		}
		return attemptsFinishedText(p), true
	}
	return "", false
}

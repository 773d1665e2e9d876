package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Sensor error codes (InputError.Code).
const (
	CodeUnknownSensor = "unknown_sensor" // sensor, known (comma-separated names)
	CodeSensorPaused  = "sensor_paused"  // sensor
	CodeSensorState   = "sensor_state"   // sensor, state: already so
	CodeNotPollSensor = "not_poll"       // sensor: it has no evaluator
	CodeNotPushSensor = "not_push"       // sensor: it polls an evaluator, it takes no events
)

// PushEvent is an event pushed to a sensor: which partitions of its assets
// (all of them unless Assets names some) it concerns, as keys or a range.
type PushEvent struct {
	MessageID  string   `json:"message_id"`
	Assets     []string `json:"assets,omitempty"`
	Partitions []string `json:"partitions,omitempty"`
	Start      string   `json:"start,omitempty"`
	End        string   `json:"end,omitempty"`
}

// EventResult is what a pushed event did: its first outcome, and whether
// this answer repeats it (the message id was seen before).
type EventResult struct {
	Event    db.SensorEvent `json:"event"`
	Replayed bool           `json:"replayed"`
	// Backfill is the backfill the event launched, as created (nil when
	// the answer repeats an earlier outcome: read it by Event.BackfillID).
	Backfill *db.Backfill `json:"-"`
}

// sensorActor is who launches a sensor's backfills.
func sensorActor(name string) string { return "sensor:" + name }

// sensorOf returns the workspace's sensor name or the 404 naming the known.
func (e *Engine) sensorOf(name string) (*catalog.Sensor, error) {
	ws, _ := e.workspace()
	if s := ws.Sensor(name); s != nil {
		return s, nil
	}
	return nil, &InputError{NotFound: true, Field: "sensor", Code: CodeUnknownSensor, Params: map[string]string{"sensor": name, "known": strings.Join(ws.SensorNames(), ", ")},
		Msg: fmt.Sprintf("unknown sensor %q", name)}
}

// Push records an event pushed to sensor name by actor and launches the
// backfill it asks for, once per message id: the same message id answers
// its first outcome, also after a restart, and never launches again. Bad
// input (no message id, an unknown asset or partition) is refused with an
// InputError and records nothing; so is an event for a paused or disabled
// sensor (409: send it again later) and one for a poll sensor (409).
func (e *Engine) Push(ctx context.Context, name string, ev PushEvent, actor string) (EventResult, error) {
	if mm := e.WorkspaceMismatch(); mm != nil {
		return EventResult{}, mm.Refusal("take pushed sensor events")
	}
	s, err := e.sensorOf(name)
	if err != nil {
		return EventResult{}, err
	}
	if s.Poll() {
		// Its page and history show evaluations, not events: an event
		// would launch a backfill seen nowhere.
		return EventResult{}, &InputError{Conflict: true, Field: "sensor", Code: CodeNotPushSensor, Params: map[string]string{"sensor": name},
			Msg: fmt.Sprintf("sensor %s polls its evaluator; it takes no pushed events", name)}
	}
	switch {
	case strings.TrimSpace(ev.MessageID) == "":
		return EventResult{}, bad("message_id", "message_id is required: a unique id of the event, so that sending it again launches nothing twice")
	case len(ev.MessageID) > catalog.MaxMessageIDLen:
		return EventResult{}, bad("message_id", "message_id is %d bytes long; at most %d", len(ev.MessageID), catalog.MaxMessageIDLen)
	case !utf8.ValidString(ev.MessageID) || strings.ContainsFunc(ev.MessageID, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return EventResult{}, bad("message_id", "message_id must be printable text")
	}
	if prev, err := e.Store.SensorEventOf(ctx, name, ev.MessageID); err == nil {
		return EventResult{Event: prev, Replayed: true}, nil
	} else if !errors.Is(err, db.ErrNotFound) {
		return EventResult{}, err
	}
	// Read, not created: a refused event writes nothing (the state is
	// created with the first event recorded).
	st, err := e.Store.SensorStateOf(ctx, name)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return EventResult{}, err
	}
	if st.Paused || !s.Enabled {
		why := "paused"
		if !s.Enabled {
			why = "disabled in the workspace"
		}
		return EventResult{}, &InputError{Conflict: true, Field: "sensor", Code: CodeSensorPaused, Params: map[string]string{"sensor": name, "state": why},
			Msg: fmt.Sprintf("sensor %s is %s; the event was not recorded, send it again once it runs", name, why)}
	}
	req, err := e.eventRequest(s, ev)
	if err != nil {
		return EventResult{}, err
	}
	r, err := e.resolve(ctx, req)
	if err != nil {
		return EventResult{}, err
	}
	reply := make(chan pushReply, 1)
	e.pushes.start(e)
	select {
	case e.pushes.in <- pushItem{ctx: ctx, sensor: name, ev: ev, actor: actor, item: BatchItem{Req: req, IdemKey: "msg:" + ev.MessageID, Actor: sensorActor(name), resolved: r}, reply: reply}:
	case <-ctx.Done():
		return EventResult{}, ctx.Err()
	}
	select {
	case rep := <-reply:
		return rep.res, rep.err
	case <-ctx.Done():
		return EventResult{}, ctx.Err()
	}
}

// pushBatcher records the events pushed at the same time in one
// transaction (group commit): each push resolves its request in its own
// goroutine, then waits for the batch it joined to commit.
type pushBatcher struct {
	once sync.Once
	in   chan pushItem
}

type pushItem struct {
	ctx    context.Context
	sensor string
	ev     PushEvent
	actor  string
	item   BatchItem
	reply  chan pushReply
}

type pushReply struct {
	res EventResult
	err error
}

// maxPushBatch bounds the events of one transaction.
const maxPushBatch = 256

func (p *pushBatcher) start(e *Engine) {
	p.once.Do(func() {
		p.in = make(chan pushItem, maxPushBatch)
		go p.run(e)
	})
}

// pushLinger is how long the batcher stays urgent after a commit, waiting
// for the senders it answered to push again.
const pushLinger = 5 * time.Millisecond

// run takes the pushes waiting, up to maxPushBatch, and commits them. While
// pushes keep coming (the next within pushLinger of a commit), it is an
// urgent writer: the controller's steps wait for it (writer_priority.go),
// instead of taking the writer between every two batches.
func (p *pushBatcher) run(e *Engine) {
	endUrgent := func() {}
	linger := time.NewTimer(pushLinger)
	for {
		var first pushItem
		select {
		case first = <-p.in:
		default:
			linger.Reset(pushLinger)
			select {
			case first = <-p.in:
			case <-linger.C:
				endUrgent()
				first = <-p.in
			}
		}
		// Urgent again before the last mark ends: no gap for a step.
		next := e.Store.BeginUrgent()
		endUrgent()
		endUrgent = next
		batch := []pushItem{first}
	more:
		for len(batch) < maxPushBatch {
			select {
			case it := <-p.in:
				batch = append(batch, it)
			default:
				break more
			}
		}
		e.commitPushes(batch)
	}
}

// commitPushes creates the backfills of batch and records its events in
// one transaction, and answers each push.
func (e *Engine) commitPushes(batch []pushItem) {
	items := make([]BatchItem, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	out := make([]EventResult, len(batch))
	now := e.Now()
	// The batch's transaction is not any one request's: it runs to the
	// end even if a sender goes away.
	record := func(tx *db.Tx, i int, c Created) error {
		id := c.Backfill.ID
		p := batch[i]
		stored, first, err := db.RecordSensorEventTx(context.Background(), tx, db.SensorEvent{Sensor: p.sensor, MessageID: p.ev.MessageID,
			ReceivedAt: db.Millis(now), Outcome: db.EventLaunched, BackfillID: &id, Actor: p.actor})
		out[i] = EventResult{Event: stored, Replayed: !first}
		if first && !c.Replayed {
			b := c.Backfill
			out[i].Backfill = &b
		}
		return err
	}
	refused, err := e.CreateBatch(context.Background(), items, record)
	// Another instance on the database committed a push of the same
	// message id first (its batch, like this one, read none): the batch
	// again finds that event's backfill and answers its outcome.
	for retry := 0; retry < 3 && db.IsUniqueViolation(err); retry++ {
		refused, err = e.CreateBatch(context.Background(), items, record)
	}
	for i, p := range batch {
		switch {
		case err != nil:
			p.reply <- pushReply{err: err}
		case refused[i] != nil:
			// Another push of the same message id with another body
			// committed first: the first outcome is the answer.
			var ie *InputError
			if errors.As(refused[i], &ie) && ie.Code == CodeKeyReused {
				if first, ferr := e.Store.SensorEventOf(context.Background(), p.sensor, p.ev.MessageID); ferr == nil {
					p.reply <- pushReply{res: EventResult{Event: first, Replayed: true}}
					continue
				}
			}
			p.reply <- pushReply{err: refused[i]}
		default:
			p.reply <- pushReply{res: out[i]}
		}
	}
}

// eventRequest is the backfill request of a pushed event.
func (e *Engine) eventRequest(s *catalog.Sensor, ev PushEvent) (Request, error) {
	assets := s.Assets
	if len(ev.Assets) > 0 {
		for i, a := range ev.Assets {
			if !slices.Contains(s.Assets, a) {
				return Request{}, &InputError{Field: fmt.Sprintf("assets[%d]", i), Code: CodeUnknownAsset, Params: map[string]string{"asset": a},
					Msg: fmt.Sprintf("asset %q is not one of sensor %s's assets (%s)", a, s.Name, strings.Join(s.Assets, ", "))}
			}
		}
		assets = ev.Assets
	}
	req := Request{Assets: assets, Priority: s.Priority,
		Title: fmt.Sprintf("Sensor %s, event %s", s.Name, ev.MessageID)}
	if utf8.RuneCountInString(req.Title) > MaxTitleLen {
		req.Title = string([]rune(req.Title)[:MaxTitleLen])
	}
	req.ChunkSize, req.MaxConcurrentRuns = LaunchDefaults(s.ChunkSize, s.MaxConcurrent)
	switch {
	case len(ev.Partitions) > 0 && (ev.Start != "" || ev.End != ""):
		return Request{}, bad("partitions", "give partitions or start/end, not both")
	case len(ev.Partitions) > 0:
		req.Selector = Selector{Type: "explicit", Keys: ev.Partitions}
	case ev.Start != "" || ev.End != "":
		req.Selector = Selector{Type: "range", Start: ev.Start, End: ev.End}
	default:
		return Request{}, bad("partitions", "say which partitions the event concerns: partitions (a list of keys) or start and end (a range)")
	}
	return req, nil
}

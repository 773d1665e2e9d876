package handlers

import (
	"context"
	"sync"

	"github.com/tessera-dev/tessera/db"
)

// eventTexts memoizes the one-line summaries of events (eventText). Events
// are never changed once appended, so a summary is computed once: the
// payload of a backfill's attempts event lists every partition of its
// attempts (hundreds of kilobytes at 100 attempts of 100 partitions), and
// decoding the forty newest of them on every refresh of the backfill page,
// its live summary, buttons and timeline cost a quarter of a second at
// rest and more while the backfill runs. The zero value is ready; the
// oldest summaries are dropped beyond maxEventTexts.
//
// Many viewers of the same running backfill ask for the same new events at
// once: the first to miss an event summarizes it (reading its payload) and
// the others wait for that summary instead of reading and decoding the
// same payload each (pending).
type eventTexts struct {
	mu      sync.Mutex
	texts   map[int64]string
	order   []int64                 // insertion order, for eviction
	pending map[int64]chan struct{} // summaries being computed, closed when done
	onClaim func(id int64)          // tests: called (under mu) for each claim
}

const maxEventTexts = 20_000

func (c *eventTexts) get(id int64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.texts[id]
	return t, ok
}

func (c *eventTexts) put(id int64, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.texts == nil {
		c.texts = map[int64]string{}
	}
	if _, ok := c.texts[id]; ok {
		return
	}
	if len(c.order) >= maxEventTexts {
		drop := len(c.order) / 4
		for _, old := range c.order[:drop] {
			delete(c.texts, old)
		}
		c.order = append(c.order[:0], c.order[drop:]...)
	}
	c.texts[id] = text
	c.order = append(c.order, id)
}

// text is e's summary (e carries its payload).
func (c *eventTexts) text(e db.Event) string {
	if t, ok := c.get(e.ID); ok {
		return t
	}
	t, ok := skimmedEventText(e)
	if !ok {
		t = eventText(e)
	}
	c.put(e.ID, t)
	return t
}

// claim returns, of ids, those whose summary this caller is now to compute
// (mine) and the channels of those another caller is computing (theirs);
// release(mine) must follow.
func (c *eventTexts) claim(ids []int64) (mine []int64, theirs []chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[int64]chan struct{}{}
	}
	for _, id := range ids {
		if _, ok := c.texts[id]; ok {
			continue
		}
		if ch, ok := c.pending[id]; ok {
			theirs = append(theirs, ch)
			continue
		}
		c.pending[id] = make(chan struct{})
		mine = append(mine, id)
		if c.onClaim != nil {
			c.onClaim(id)
		}
	}
	return mine, theirs
}

// release ends the claims on ids (their summaries put, or failed).
func (c *eventTexts) release(ids []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if ch, ok := c.pending[id]; ok {
			close(ch)
			delete(c.pending, id)
		}
	}
}

// summarize returns the summaries of events, some or all read without
// their payloads (db.EventHeadsBySubject, db.EventsBySubjectCapped): an
// event not memoized is summarized from its payload, read apart when it was
// left out.
func (c *eventTexts) summarize(ctx context.Context, store *db.Store, evs []db.Event) ([]string, error) {
	out := make([]string, len(evs))
	var missing []int64
	for i, e := range evs {
		t, ok := c.get(e.ID)
		switch {
		case ok:
			out[i] = t
		case e.Payload != "":
			out[i] = c.text(e)
		default:
			missing = append(missing, e.ID)
		}
	}
	// Twice at most: a summary another caller was computing is missing
	// still only when its computation failed; this caller then reads it.
	for round := 0; len(missing) > 0 && round < 2; round++ {
		mine, theirs := c.claim(missing)
		if len(mine) > 0 {
			err := c.load(ctx, store, evs, mine)
			c.release(mine)
			if err != nil {
				return nil, err
			}
		}
		for _, ch := range theirs {
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		missing = missing[:0]
		for i, e := range evs {
			if out[i] != "" {
				continue
			}
			if t, ok := c.get(e.ID); ok {
				out[i] = t
			} else {
				missing = append(missing, e.ID)
			}
		}
	}
	// Still missing: their payloads were not found (the events were pruned
	// meanwhile); their summaries stay empty, as before.
	return out, nil
}

// load reads the payloads of the events ids (of evs) and puts their
// summaries.
func (c *eventTexts) load(ctx context.Context, store *db.Store, evs []db.Event, ids []int64) error {
	payloads, err := store.EventPayloads(ctx, ids)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if p, ok := payloads[e.ID]; ok {
			e.Payload = p
			c.text(e)
		}
	}
	return nil
}

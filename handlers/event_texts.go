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
type eventTexts struct {
	mu    sync.Mutex
	texts map[int64]string
	order []int64 // insertion order, for eviction
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
	t := eventText(e)
	c.put(e.ID, t)
	return t
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
	if len(missing) == 0 {
		return out, nil
	}
	payloads, err := store.EventPayloads(ctx, missing)
	if err != nil {
		return nil, err
	}
	for i, e := range evs {
		if p, ok := payloads[e.ID]; ok {
			e.Payload = p
			out[i] = c.text(e)
		}
	}
	return out, nil
}

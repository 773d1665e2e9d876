package jobs

import (
	"context"
	"time"
)

// previewAtKey marks a context whose request is resolved as of another
// instant than now (PreviewAt).
type previewAtKey struct{}

// nowFor is the instant a request is resolved at: now, or the instant
// PreviewAt asked for.
func (e *Engine) nowFor(ctx context.Context) time.Time {
	if t, ok := ctx.Value(previewAtKey{}).(time.Time); ok {
		return t
	}
	return e.Now()
}

// PreviewAt previews req as the engine will resolve it at at: the preview
// of a schedule's next tick, whose windows may close only at the tick
// (an hourly tick at 17:05 builds the hour that closes at 17:00, which
// is not a partition yet at 16:50). It writes nothing.
func (e *Engine) PreviewAt(ctx context.Context, req Request, at time.Time) (*Preview, error) {
	return e.Preview(context.WithValue(ctx, previewAtKey{}, at), req)
}

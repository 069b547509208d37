package resumable

import (
	"context"
	"errors"
	"io"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo/ingest"
)

// Every chunk of an upload is admitted as it arrives, whatever the
// protocol (a tus PATCH or creation with a body, an IETF creation or
// append) and whether or not the upload's length is known: by the write
// pipeline (ingest.Held), against the size limit, the free space above
// the reserve and the quotas of the upload's owner and of the paths of
// its file, before the staging stores a byte of it. Each upload this
// server receives chunks for keeps a hold on the quotas (holds) that
// holds every byte it staged, from its first chunk here until it is
// placed, refused, cancelled or expired; an upload nothing came for in
// Config.Expiry (one another server removed) has its hold swept. After a
// restart an upload's hold is taken again at its next chunk, for the
// bytes it holds then.

// chunkSizeKey is the context key of the size a request announces for
// the chunk it carries (its Content-Length).
type chunkSizeKey struct{}

// withChunkSize returns ctx carrying the size of the chunk of its
// request, -1 when not known: the staging's WriteChunk is given only
// the body.
func withChunkSize(ctx context.Context, size int64) context.Context {
	return context.WithValue(ctx, chunkSizeKey{}, size)
}

// chunkSize returns the size ctx carries for its chunk, or -1.
func chunkSize(ctx context.Context) int64 {
	if n, ok := ctx.Value(chunkSizeKey{}).(int64); ok && n >= 0 {
		return n
	}
	return -1
}

// heldUpload is an upload's hold on the quotas, with when a chunk last
// came for it.
type heldUpload struct {
	held *ingest.Held
	last time.Time
}

// admitChunk admits a chunk, src, of the upload info (at its offset),
// through the upload's hold, taken now if this server has none, for its
// owner (owner.go); for the principal that sends it when the upload
// records no owner (an older version's, which is never placed).
func (h *Handler) admitChunk(ctx context.Context, info tusd.FileInfo, src io.Reader) (*ingest.Chunk, error) {
	held, err := h.holdOf(ctx, info)
	if err != nil {
		return nil, err
	}
	return held.Chunk(ctx, info.Offset, chunkSize(ctx), src)
}

// holdOf returns the hold of the upload info, taken for the bytes it
// holds if there is none.
func (h *Handler) holdOf(ctx context.Context, info tusd.FileInfo) (*ingest.Held, error) {
	now := h.cfg.Now()
	h.holdMu.Lock()
	if hu := h.holds[info.ID]; hu != nil {
		hu.last = now
		h.holdMu.Unlock()
		return hu.held, nil
	}
	h.holdMu.Unlock()
	octx, err := asOwner(ctx, info.MetaData)
	if errors.Is(err, errNoOwner) {
		octx, err = ctx, nil
	}
	if err != nil {
		return nil, err
	}
	t, err := parseTarget(info.MetaData)
	if err != nil {
		return nil, err
	}
	held, err := h.cfg.Writes.Hold(octx, t.Name, info.Offset)
	if err != nil {
		return nil, err
	}
	h.holdMu.Lock()
	defer h.holdMu.Unlock()
	if hu := h.holds[info.ID]; hu != nil {
		held.Release() // taken meanwhile
		return hu.held, nil
	}
	h.holds[info.ID] = &heldUpload{held: held, last: now}
	return held, nil
}

// release ends the holds of the uploads ids: placed, refused, cancelled
// or expired, or partials whose final is admitted for the whole file.
func (h *Handler) release(ids ...string) {
	h.holdMu.Lock()
	defer h.holdMu.Unlock()
	for _, id := range ids {
		if hu := h.holds[id]; hu != nil {
			hu.held.Release()
			delete(h.holds, id)
		}
	}
}

// sweepHolds ends the holds of the uploads no chunk came for since
// before: expired, or removed through another server.
func (h *Handler) sweepHolds(before time.Time) {
	h.holdMu.Lock()
	defer h.holdMu.Unlock()
	for id, hu := range h.holds {
		if hu.last.Before(before) && !h.busy(id) {
			hu.held.Release()
			delete(h.holds, id)
		}
	}
}

package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"largo"
)

// A resumable upload's bytes do not arrive in one body: they come in
// chunks (tus PATCHes, IETF appends), over hours, through one server or
// several, and the whole length may not be known until the last one. Its
// admission at creation (Check) cannot bound them, so each chunk is
// admitted as it comes, by the same rules as the body of a write:
//
//   - the size limit: the bytes staged and the chunk together (413);
//   - the free space less the reserve and the writes in flight: the
//     chunk's announced size is promised to it while it makes progress,
//     as a write's is (507);
//   - the quotas: an upload's Held keeps a claim (Quota.AdmitBytes) for as
//     long as the upload lives, which holds every byte staged, so that
//     what an upload staged counts against its owner's and its paths'
//     quotas until it is placed, and uploads together cannot overrun one
//     (507, the quota named).
//
// A chunk whose size is announced is refused whole before a byte of it is
// read; one whose size is not is bounded as it is read: the first bytes
// past a limit are never handed to the staging, and the chunk ends there
// (Chunk.Read ends at io.EOF and Chunk.Err says why), so that a staging
// stores exactly the bytes admitted.

// Held is a resumable upload's hold on the quotas, from the first chunk
// the server receives for it until the upload is placed, removed or
// expires (Release). It is safe for concurrent use; an upload's chunks
// are admitted one at a time.
type Held struct {
	p    *Pipeline
	name string

	mu    sync.Mutex
	claim Claim // nil: no quotas
	held  int64 // the bytes the claim holds
	ended bool
}

// errReleased refuses a chunk of an upload whose hold has ended.
var errReleased = errors.New("a chunk of a resumable upload whose hold has ended")

// Hold admits the bytes of a resumable upload to name, for the principal
// ctx carries (the upload's owner), that has staged bytes already: they
// must fit the size limit and the quotas, which hold them from now on.
// The upload's file itself was admitted at its creation (Check) and is
// admitted again when it is placed (Place): release the Held before.
func (p *Pipeline) Hold(ctx context.Context, name string, staged int64) (*Held, error) {
	if err := p.checkMax(staged); err != nil {
		return nil, err
	}
	h := &Held{p: p, name: name}
	if p.cfg.Quota != nil {
		c, err := p.cfg.Quota.AdmitBytes(ctx, name)
		if err != nil {
			return nil, err
		}
		h.claim = c
	}
	if err := h.grow(staged); err != nil {
		h.Release()
		return nil, err
	}
	return h, nil
}

// Release ends the hold: the upload was placed, refused, removed or
// expired. It is safe to call more than once.
func (h *Held) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return
	}
	h.ended = true
	if h.claim != nil {
		h.claim.Release()
	}
}

// grow makes the claim hold n bytes in all, if it holds fewer.
func (h *Held) grow(n int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.ended:
		return errReleased
	case n <= h.held:
		return nil
	case h.claim != nil:
		if err := h.claim.Grow(n - h.held); err != nil {
			return err
		}
	}
	h.held = n
	return nil
}

// checkMax refuses a file of n bytes over the size limit.
func (p *Pipeline) checkMax(n int64) error {
	if p.cfg.MaxSize > 0 && n > p.cfg.MaxSize {
		return fmt.Errorf("%d bytes, limit %d: %w", n, p.cfg.MaxSize, largo.ErrTooLarge)
	}
	return nil
}

// CheckChunk refuses, holding nothing, size more bytes (-1: not known) of
// an upload to name that has staged bytes already: over the size limit
// (413), over the free space less the reserve and the writes in flight,
// or over a quota, in bytes (507; the upload's file was admitted at its
// creation). It is what admitting the chunk (Held.Chunk) would refuse,
// asked before there is an upload to hold (an IETF creation, before its
// 104) or of a length declared.
func (p *Pipeline) CheckChunk(ctx context.Context, name string, staged, size int64) error {
	if err := p.checkMax(staged + max(size, 0)); err != nil {
		return err
	}
	if _, _, err := p.room(ctx, name, size, false); err != nil {
		return err
	}
	if p.cfg.Quota == nil {
		return nil
	}
	c, err := p.cfg.Quota.AdmitBytes(ctx, name)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.Grow(max(size, 0))
}

// Chunk is one chunk of a held upload in flight: the staging reads its
// bytes through it (Read), then ends it (End).
type Chunk struct {
	h      *Held
	r      io.Reader
	staged int64 // the upload's bytes before the chunk
	got    int64 // the chunk's bytes read through it
	room   int64 // the most bytes it may take: the free space above the reserve
	space  *hold // the space promised to it, nil for none
	err    error // why it stopped taking bytes
}

// Chunk admits a chunk of size bytes (-1: not known), body, of the held
// upload, which has staged bytes already (its offset). A chunk whose size
// is known is refused here, before a byte of it is read; the room of one
// whose size is not is checked as it is read (Read). End the chunk once
// the staging has stored it.
func (h *Held) Chunk(ctx context.Context, staged, size int64, body io.Reader) (*Chunk, error) {
	p := h.p
	if err := p.checkMax(staged + max(size, 0)); err != nil {
		return nil, err
	}
	room, space, err := p.room(ctx, h.name, size, true)
	if err != nil {
		return nil, err
	}
	// The bytes staged (another server may have staged some since), and
	// the chunk's.
	if err := h.grow(staged + max(size, 0)); err != nil {
		p.giveBack(space)
		return nil, err
	}
	return &Chunk{h: h, r: body, staged: staged, room: room, space: space}, nil
}

// Read reads the chunk's body, admitting each piece read: one that would
// take the upload past the size limit, the chunk past its room or a quota
// past its limit is not returned, and the chunk ends there (io.EOF, the
// reason in Err). A read error of the body ends it too, with that error
// in Err, so that the staging stores what came before.
func (c *Chunk) Read(b []byte) (int, error) {
	if c.err != nil {
		return 0, io.EOF
	}
	n, err := c.r.Read(b)
	if n > 0 {
		if aerr := c.admit(int64(n)); aerr != nil {
			c.err = aerr
			return 0, io.EOF
		}
	}
	switch {
	case err == io.EOF:
		return n, io.EOF
	case err != nil:
		c.err = err
		return n, io.EOF
	}
	return n, nil
}

// admit takes n more bytes of the chunk, or says why not.
func (c *Chunk) admit(n int64) error {
	p := c.h.p
	total := c.staged + c.got + n
	switch {
	case p.cfg.MaxSize > 0 && total > p.cfg.MaxSize:
		return fmt.Errorf("more than %d bytes: %w", p.cfg.MaxSize, largo.ErrTooLarge)
	case c.got+n > c.room:
		return fmt.Errorf("more than the %d bytes free above the reserve: %w", c.room, largo.ErrNoSpace)
	}
	if err := c.h.grow(total); err != nil {
		return err
	}
	c.got += n
	p.received(c.space, n)
	return nil
}

// Err returns why the chunk stopped taking bytes before its body ended: a
// limit's refusal (ErrTooLarge, ErrNoSpace, a *largo.QuotaError) or the
// body's own read error; nil when the body ended.
func (c *Chunk) Err() error { return c.err }

// End gives back what is left of the space promised to the chunk; what
// it staged stays held against the quotas. It is safe to call more than
// once.
func (c *Chunk) End() {
	c.h.p.giveBack(c.space)
	c.space = nil
}

package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"largo"
	"largo/internal/spool"
)

// Write is a write admitted by Begin: receive its bytes with ReadFrom,
// then Commit, or Abort. Until Commit succeeds nothing of it is visible.
type Write struct {
	p    *Pipeline
	t    Target
	u    largo.Upload
	h    hash.Hash
	sum  []byte // the SHA-256 when known without hashing (adopted bytes)
	n    int64
	room int64 // the most bytes the write may store: the free space, or the size limit
	hold *hold // the space promised to it, nil for none
	// claim is its hold on the quotas, nil for none.
	claim Claim
	// pending counts the bytes reported to the Observer, taken back when
	// the write ends.
	pending int64
	sp      *spool.Writer
	ended   bool
	copied  bool // a copy made by the store: no bytes, no hash
	// unhashed: an assembly placed without its digest (Staged.SHA256).
	unhashed bool
	// src and srcETag are the source of a copy made by the store, and
	// its version when the copy began: its digest is the copy's.
	src, srcETag string
}

// Begin admits t and opens the store's upload. Its announced size, if
// any, is held as a reservation until the bytes are written or the write
// ends. Nothing of the request's body is read.
func (p *Pipeline) Begin(ctx context.Context, t Target) (*Write, error) {
	if err := p.admit(ctx, &t); err != nil {
		return nil, err
	}
	room, h, err := p.room(ctx, t.Name, t.Size, true)
	if err != nil {
		return nil, err
	}
	if err := p.ask(ctx, &t); err != nil {
		p.giveBack(h)
		return nil, err
	}
	if p.cfg.MaxSize > 0 {
		room = min(room, p.cfg.MaxSize)
	}
	w := &Write{p: p, t: t, h: sha256.New(), room: room, hold: h}
	if w.claim, err = p.claim(ctx, t.Name, t.Size, true, t.known()); err != nil {
		w.releaseAll()
		return nil, err
	}
	w.u, err = p.cr.Create(ctx, t.Name, p.createOptions(&t, t.Size))
	if err != nil {
		w.releaseAll()
		return nil, CondErr(targetErr(err), t.Cond)
	}
	return w, nil
}

// Name returns the name the write goes to.
func (w *Write) Name() string { return w.t.Name }

// Written returns the bytes received so far.
func (w *Write) Written() int64 { return w.n }

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// ReadFrom receives body into the write, through a pooled buffer, until
// io.EOF, and returns the bytes stored. Errors say which side failed: the
// client's (largo.ErrBodyTimeout, largo.ErrBodyIncomplete), the limits' (ErrTooLarge,
// ErrNoSpace) or the store's. After an error the write must be aborted.
func (w *Write) ReadFrom(body io.Reader) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var total int64
	for {
		n, rerr := fill(body, buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, BodyErr(rerr)
		}
	}
}

// Write stores p, for a writer that produces the bytes itself (a
// compressor): the same limits and hashing as ReadFrom, which calls it.
// Large buffers are hashed on a second core while the store takes them.
// After an error the write must be aborted.
func (w *Write) Write(p []byte) (int, error) {
	switch {
	case w.ended:
		return 0, errors.New("write to an ended upload")
	case w.copied:
		return 0, errors.New("write to a copy made by the store")
	case w.n+int64(len(p)) > w.room:
		return 0, w.overflow()
	}
	if w.claim != nil {
		if err := w.claim.Grow(int64(len(p))); err != nil {
			return 0, err
		}
	}
	if w.sp == nil {
		w.sp = spool.New(w.u, w.h)
	}
	n, err := w.sp.Write(p)
	w.n += int64(n)
	w.pending += int64(n)
	w.p.obs.PendingBytes(int64(n))
	w.p.received(w.hold, int64(n))
	return n, err
}

// overflow is the error of a write that outgrew its room.
func (w *Write) overflow() error {
	if limit := w.p.cfg.MaxSize; limit > 0 && w.room == limit {
		return fmt.Errorf("more than %d bytes: %w", limit, largo.ErrTooLarge)
	}
	return fmt.Errorf("more than the %d bytes free above the reserve: %w", w.room, largo.ErrNoSpace)
}

// fill reads into buf until it is full or r fails, and returns r's own
// error: whole buffers make one write per 256 KiB however the network cut
// the bytes. (io.ReadFull would not do: it turns an early io.EOF into
// io.ErrUnexpectedEOF, the very error of a body cut short.)
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Result is a committed write.
type Result struct {
	// Info describes the file as stored.
	Info largo.Info
	// Created reports that no file was there before.
	Created bool
	// SHA256 is the SHA-256 of its bytes; for a copy made by the store,
	// its source's recorded one, or nil when none was.
	SHA256 []byte
}

// Commit checks the bytes against the digest the target asked for, then
// makes them visible at the name if the condition holds at that moment.
// Pass a context that outlives the client when the body is complete (the
// commit should finish even if the client hangs up now). After any error
// the write is gone, as after Abort.
func (w *Write) Commit(ctx context.Context) (Result, error) {
	if w.ended {
		return Result{}, errors.New("commit of an ended upload")
	}
	sum := w.SHA256()
	if w.t.SHA256 != nil && string(w.t.SHA256) != string(sum) {
		w.Abort()
		return Result{}, &largo.DigestError{Name: w.t.Name, SHA256: sum}
	}
	w.ended = true
	w.stop()
	defer w.releaseAll()
	in, created, err := w.u.Commit(ctx, w.t.Cond)
	if err != nil {
		return Result{}, CondErr(targetErr(err), w.t.Cond)
	}
	err = w.p.landed(ctx, w.t.Name, in)
	w.p.changed(w.t.Name) // committed, or taken back since
	if err != nil {
		return Result{}, err
	}
	if w.copied {
		sum = w.p.copiedSum(ctx, w.src, w.srcETag)
	}
	was := w.t.was
	if created {
		was = largo.Info{}
	}
	prev := w.p.recordOf(ctx, w.t.Name, was, false)
	rec := newRecord(&w.t, in, sum)
	if w.claim != nil {
		w.claim.Commit(ctx, in, created, &rec)
	}
	if l := w.p.cfg.Landed; l != nil {
		l.Landed(ctx, w.t.Name, in, &rec)
	}
	w.p.keepRecord(ctx, rec)
	w.p.follow(ctx, Change{Name: w.t.Name, Was: was, Now: in, Record: prev})
	if !w.t.moving {
		w.p.notify(ctx, Event{Type: EventCommitted, Name: w.t.Name, Info: in, SHA256: sum, Protocol: w.t.Protocol, Metadata: w.t.Hooked})
	}
	return Result{Info: in, Created: created, SHA256: sum}, nil
}

// copiedSum returns the digest of a copy made by the store of src: its
// source's, when one is recorded for the version etag the source had
// when the copy began and still has now (so that it is the version
// copied).
func (p *Pipeline) copiedSum(ctx context.Context, src, etag string) []byte {
	if etag == "" {
		return nil
	}
	in, err := p.cfg.Store.Stat(ctx, src)
	if err != nil || in.ETag != etag {
		return nil
	}
	return p.recorded(ctx, src, etag)
}

// SHA256 returns the SHA-256 of the bytes received so far; nil for a
// copy made by the store (BeginCopy), whose bytes the pipeline never saw,
// and for an assembly placed without its digest.
func (w *Write) SHA256() []byte {
	if w.sum != nil || w.copied || w.unhashed {
		return w.sum
	}
	w.stop()
	return w.h.Sum(nil)
}

// Abort discards the write. It is safe to call after Commit, when it does
// nothing.
func (w *Write) Abort() {
	if w.ended {
		return
	}
	w.ended = true
	w.stop()
	w.releaseAll()
	w.u.Abort()
}

// stop ends the hashing goroutine; the hash stays readable.
func (w *Write) stop() {
	if w.sp != nil {
		w.sp.Close()
		w.sp = nil
	}
}

// releaseAll gives back what is left of the reservation and of the
// pending bytes reported.
func (w *Write) releaseAll() {
	w.p.giveBack(w.hold)
	w.hold = nil
	if w.claim != nil {
		w.claim.Release()
	}
	w.p.obs.PendingBytes(-w.pending)
	w.pending = 0
}

// targetErr names, in the errors of Create and Commit, what a writer
// should be told: a missing folder or a file in the way (409), instead of
// the 404 they mean on reads.
func targetErr(err error) error {
	switch {
	case errors.Is(err, largo.ErrMissingFolder), errors.Is(err, largo.ErrParentNotDir):
		return err
	case errors.Is(err, largo.ErrNotFound):
		return fmt.Errorf("%w: %w", largo.ErrMissingFolder, err)
	case errors.Is(err, largo.ErrNotDir):
		return fmt.Errorf("%w: %w", largo.ErrParentNotDir, err)
	}
	return err
}

// CondErr names, in an ErrUnsupported met under a condition, the
// condition as what the store cannot do: an object store whose server
// turned out to ignore conditional writes.
func CondErr(err error, cond largo.Condition) error {
	if cond != (largo.Condition{}) && errors.Is(err, largo.ErrUnsupported) && !errors.Is(err, largo.ErrCondUnsupported) {
		return fmt.Errorf("%w: %w", largo.ErrCondUnsupported, err)
	}
	return err
}

package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// minSegment is the smallest segment worth its own request.
const minSegment = 1 << 20

// A segmented download saves the segments' progress every saveEvery, or
// sooner once saveBytes more have arrived (a fast link moves hundreds of
// MiB in a quarter of a second), and every syncEvery it syncs the part file
// first: the state never counts as durable bytes a power cut could lose
// (preallocated blocks would read back as zeros). Bytes written since the
// last sync are saved apart with the boot's identity, and trusted only
// within that boot: a killed client loses a fraction of a second of
// transfer, not a sync's worth, which on a busy disk can be seconds.
const (
	saveCheck = 25 * time.Millisecond
	saveEvery = 250 * time.Millisecond
	saveBytes = 32 << 20
	syncEvery = 2 * time.Second
)

// errChanged ends a segmented download whose remote file changed (or whose
// server stopped honouring ranges).
var (
	errChanged  = errors.New("the remote file changed")
	errNoRanges = errors.New("the server ignored the range request")
)

// liveSeg is a segment being fetched; done is read by the saver while a
// worker adds to it.
type liveSeg struct {
	start, end int64
	done       atomic.Int64
}

// segmented fetches the file in ranged requests at once into a preallocated
// part file, resuming each segment where st left it. With no state it first
// asks for one byte, to learn the size, the validator and whether ranges
// work at all.
func (d *download) segmented(ctx context.Context, st *partState) (Result, error) {
	if st == nil {
		var resp *http.Response
		var err error
		st, resp, err = d.probe(ctx)
		switch {
		case errors.Is(err, errUpToDate):
			return d.res, nil
		case err != nil:
			return d.res, err
		case resp != nil: // no ranges: this answer is the whole file
			d.c.logf("%s: the server does not support ranges; downloading in one stream", d.path)
			return d.single(ctx, nil, resp)
		case st == nil: // too small to split
			return d.single(ctx, nil, nil)
		}
	}
	if st.Size < 0 {
		return d.single(ctx, st, nil)
	}
	if st.Segments == nil {
		// A one-stream part file: its bytes become the first segment.
		fi, err := os.Stat(d.part)
		if err != nil {
			return d.res, localError{err}
		}
		st.Segments = split(fi.Size(), st.Size, max(d.c.Segments, 1))
	}
	f, err := os.OpenFile(d.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return d.res, localError{err}
	}
	defer f.Close()
	if err := allocate(f, st.Size); err != nil {
		return d.res, localError{fmt.Errorf("reserving %d bytes for %s: %w", st.Size, d.part, err)}
	}
	if err := saveState(d.part, st); err != nil {
		return d.res, err
	}

	boot := bootID()
	sameBoot := boot != "" && st.Boot == boot
	st.Boot = boot
	segs := make([]*liveSeg, len(st.Segments))
	var have int64
	for i, s := range st.Segments {
		from := s.resumeFrom(sameBoot)
		segs[i] = &liveSeg{start: s.Start, end: s.End}
		segs[i].done.Store(from)
		st.Segments[i].Written = from // Done stays: only a sync makes bytes durable
		have += from
	}
	d.prog.Begin(filepath.Base(d.path), st.Size, have)
	var moved atomic.Int64
	lastSync := time.Now()
	// snapshot saves the progress; with sync, it first makes the bytes
	// written so far durable and counts them as done.
	snapshot := func(sync bool) error {
		written := make([]int64, len(segs))
		for i, s := range segs {
			written[i] = s.done.Load() // read before the sync: covered by it
		}
		if sync {
			if err := f.Sync(); err != nil {
				return localError{err}
			}
		}
		for i := range segs {
			st.Segments[i].Written = written[i]
			if sync {
				st.Segments[i].Done = written[i]
			}
		}
		return saveState(d.part, st)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(d.c.Segments, 1))
	stopSaver := make(chan struct{})
	var saver sync.WaitGroup
	saver.Go(func() {
		t := time.NewTicker(saveCheck)
		defer t.Stop()
		lastSave, savedMoved := time.Now(), int64(0)
		for {
			select {
			case <-stopSaver:
				return
			case <-t.C:
				if time.Since(lastSave) < saveEvery && moved.Load()-savedMoved < saveBytes {
					continue
				}
				lastSave, savedMoved = time.Now(), moved.Load()
				sync := time.Since(lastSync) >= syncEvery
				if sync {
					lastSync = time.Now()
				}
				if err := snapshot(sync); err != nil {
					d.c.logf("%s: saving the resume state: %v", d.path, err)
				}
			}
		}
	})
	for _, s := range segs {
		if s.done.Load() == s.end-s.start {
			continue
		}
		g.Go(func() error { return d.fetchSegment(gctx, f, st, s, &moved) })
	}
	err = g.Wait()
	close(stopSaver)
	saver.Wait()
	d.res.Moved += moved.Load()
	if serr := snapshot(true); err == nil {
		err = serr
	}
	if (errors.Is(err, errChanged) || errors.Is(err, errNoRanges)) && ctx.Err() == nil {
		removePart(d.part)
		if d.redone {
			return d.res, err
		}
		d.redone = true
		d.res.Resumed = false
		d.c.logf("%s: %v; starting from zero", d.path, err)
		return d.segmented(ctx, nil)
	}
	if err != nil {
		if ctx.Err() != nil {
			return d.res, resumable(context.Cause(ctx))
		}
		return d.res, err
	}
	if st.Digest != "" {
		h, err := hashFile(d.part, st.Size, st.Digest)
		if err != nil {
			return d.res, err
		}
		if err := checkDigest(st.Digest, h.Sum(nil)); err != nil {
			return d.mismatch(ctx, err)
		}
		d.res.Verified = st.Digest
	}
	return d.finish(f, st, st.Size)
}

// probe asks for the first byte. It returns the state of a segmented
// download; or the answer itself when the server sent the whole file
// (no range support); or neither when the file is too small to split.
func (d *download) probe(ctx context.Context) (*partState, *http.Response, error) {
	r := d.c.retrier()
	for {
		st, resp, err := d.probeOnce(ctx)
		if err == nil || errors.Is(err, errUpToDate) {
			return st, resp, err
		}
		if err = r.again(ctx, err); err != nil {
			return nil, nil, err
		}
	}
}

func (d *download) probeOnce(ctx context.Context) (*partState, *http.Response, error) {
	resp, err := d.request(ctx, nil, "bytes=0-0")
	if err != nil {
		return nil, nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return nil, resp, nil
	case http.StatusPartialContent:
	default:
		return nil, nil, statusError(resp)
	}
	resp.Body.Close()
	_, _, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err != nil || total < 0 {
		return nil, nil, transient("probing %s: %v", d.url, err)
	}
	if d.upToDate(total, resp.Header.Get("Last-Modified")) {
		d.res.UpToDate, d.res.Size = true, total
		return nil, nil, errUpToDate
	}
	n := min(int64(d.c.Segments), total/minSegment)
	if n < 2 {
		return nil, nil, nil
	}
	st := stateFor(d.url, resp, total)
	st.Segments = split(0, total, int(n))
	return st, nil, nil
}

// split divides [0, size) into a finished segment [0, have) (when have is
// above 0) and n segments of near-equal size over the rest.
func split(have, size int64, n int) []segment {
	var segs []segment
	if have > 0 {
		segs = append(segs, segment{Start: 0, End: have, Done: have})
	}
	rest := size - have
	n = int(max(1, min(int64(n), rest/minSegment)))
	for i := range n {
		start := have + rest*int64(i)/int64(n)
		end := have + rest*int64(i+1)/int64(n)
		if end > start {
			segs = append(segs, segment{Start: start, End: end})
		}
	}
	return segs
}

// fetchSegment fetches one segment to its end, retrying.
func (d *download) fetchSegment(ctx context.Context, f *os.File, st *partState, s *liveSeg, moved *atomic.Int64) error {
	r := d.c.retrier()
	for s.done.Load() < s.end-s.start {
		before := s.done.Load()
		err := d.segmentAttempt(ctx, f, st, s, moved)
		if err == nil {
			continue
		}
		if errors.Is(err, errChanged) || errors.Is(err, errNoRanges) {
			return err
		}
		if s.done.Load() > before {
			r.progressed()
		}
		if err = r.again(ctx, err); err != nil {
			return err
		}
	}
	return nil
}

func (d *download) segmentAttempt(ctx context.Context, f *os.File, st *partState, s *liveSeg, moved *atomic.Int64) error {
	actx, wd := d.c.watch(ctx)
	defer wd.stop()
	from := s.start + s.done.Load()
	resp, err := d.request(actx, st, fmt.Sprintf("bytes=%d-%d", from, s.end-1))
	if err != nil {
		return cause(actx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		if st.changed(resp) {
			return fmt.Errorf("%w since the part file was written", errChanged)
		}
		return errNoRanges
	case http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%w: it is shorter than the part file", errChanged)
	default:
		return statusError(resp)
	}
	start, end, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err != nil || start != from || end != s.end-1 || total != st.Size {
		return transient("asked for bytes %d-%d/%d, the server sent %q", from, s.end-1, st.Size, resp.Header.Get("Content-Range"))
	}
	w := &partWriter{w: io.NewOffsetWriter(f, from), count: func(n int64) { s.done.Add(n); moved.Add(n) }}
	n, err := io.CopyBuffer(w, &touchReader{r: resp.Body, w: wd, prog: d.prog}, make([]byte, copyBuf))
	if err != nil {
		return cause(actx, err)
	}
	if n != s.end-from {
		return transient("bytes %d-%d: the answer ended after %d bytes", from, s.end-1, n)
	}
	return nil
}

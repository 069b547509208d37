package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"largo"
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

// liveSeg is a segment being fetched; done is read by the saver while a
// worker adds to it.
type liveSeg struct {
	start, end int64
	done       atomic.Int64
}

// segmented is the step that fetches the file in ranged requests at once
// into a preallocated part file, resuming each segment where st left it.
// With no state it probes first (the next step then depends on what the
// probe learnt). When the remote file changed, or its server stopped
// honouring ranges, the next step starts over from zero.
func (d *download) segmented(ctx context.Context, st *partState) step {
	if st == nil {
		return d.probe(ctx)
	}
	if st.Size < 0 {
		return step{do: fetchStream, st: st}
	}
	run, err := d.openSegments(st)
	if err != nil {
		return stopped(err)
	}
	defer run.f.Close()
	out, err := run.fetch(ctx)
	switch {
	case out == startOver && ctx.Err() == nil:
		removePart(d.part)
		return d.fromZero(err, fetchSegments, "starting from zero")
	case err != nil && ctx.Err() != nil:
		return stopped(resumable(context.Cause(ctx)))
	case err != nil:
		return stopped(err)
	}
	return run.verify()
}

// probe asks for the first byte, retrying, to learn the size, the
// validator and whether ranges work at all, and returns the next step:
// segments with a new state; one stream, with the answer when the server
// sent the whole file; or stop, when the target is already up to date.
func (d *download) probe(ctx context.Context) step {
	r := d.c.retrier()
	for {
		next, err := d.probeOnce(ctx)
		if err == nil {
			return next
		}
		if err = r.again(ctx, err); err != nil {
			return stopped(err)
		}
	}
}

func (d *download) probeOnce(ctx context.Context) (step, error) {
	resp, err := d.request(ctx, nil, "bytes=0-0")
	if err != nil {
		return step{}, err
	}
	switch resp.StatusCode {
	case http.StatusOK: // no ranges: this answer is the whole file
		d.c.logf("%s: the server does not support ranges; downloading in one stream", d.path)
		return step{do: fetchStream, first: resp}, nil
	case http.StatusPartialContent:
	default:
		return step{}, statusError(resp)
	}
	resp.Body.Close()
	_, _, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err != nil || total < 0 {
		return step{}, transient("probing %s: %v", d.url, err)
	}
	if err := d.checkListed(total, "the server sends"); err != nil {
		return stopped(err), nil
	}
	if d.upToDate(total, resp.Header.Get("Last-Modified")) {
		d.res.UpToDate, d.res.Size = true, total
		return stopped(nil), nil
	}
	n := min(int64(d.c.Segments), total/minSegment)
	if n < 2 { // too small to split
		return step{do: fetchStream}, nil
	}
	st := stateFor(d.url, resp, total)
	st.Segments = split(0, total, int(n))
	return step{do: fetchSegments, st: st}, nil
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

// resplit cuts the unfinished segments of segs until n of them are left
// to fetch, halving each time the one with the most bytes left (those
// it has stay with its first half), while that one has at least two
// segments' worth (minSegment) left: a download resumed with more
// connections than it began with uses them. It returns the segments and
// how many are left to fetch. sameBoot says which progress counts (see
// segment.resumeFrom).
func resplit(segs []segment, n int, sameBoot bool) ([]segment, int) {
	unfinished := func() (count, widest int) {
		widest = -1
		var most int64
		for i, s := range segs {
			left := s.End - s.Start - s.resumeFrom(sameBoot)
			if left <= 0 {
				continue
			}
			count++
			if left > most {
				widest, most = i, left
			}
		}
		if most < 2*minSegment {
			widest = -1
		}
		return count, widest
	}
	for {
		count, i := unfinished()
		if count >= n || i < 0 {
			return segs, count
		}
		s := segs[i]
		from := s.resumeFrom(sameBoot)
		mid := s.Start + from + (s.End-s.Start-from)/2
		first := segment{Start: s.Start, End: mid, Done: s.Done, Written: min(s.Written, mid-s.Start)}
		segs = slices.Insert(slices.Delete(segs, i, i+1), i, first, segment{Start: mid, End: s.End})
	}
}

// segmentRun is one run of a segmented download over its part file:
// workers fetch the unfinished segments at once while a saver keeps the
// resume state. The first segment to fail stops the others and decides
// how the run ends.
type segmentRun struct {
	d     *download
	f     *os.File
	st    *partState
	segs  []*liveSeg
	moved atomic.Int64 // bytes received in this run

	cancel context.CancelCauseFunc // stops the workers
	failed sync.Once
	end    outcome // how the first segment to fail ended, with err
	err    error
}

// openSegments prepares a run from st: the segments (a one-stream part
// file's bytes become the first, finished one), the part file opened and
// preallocated at the file's size, the state saved, and the progress begun
// at the bytes already there.
func (d *download) openSegments(st *partState) (*segmentRun, error) {
	if st.Segments == nil {
		fi, err := os.Stat(d.part)
		if err != nil {
			return nil, localError{err}
		}
		st.Segments = split(fi.Size(), st.Size, max(d.c.Segments, 1))
	} else if want := max(d.c.Segments, 1); want > 1 {
		boot := bootID()
		var left int
		st.Segments, left = resplit(st.Segments, want, boot != "" && st.Boot == boot)
		if left < want {
			d.c.logf("%s: resuming with %d connections, not %d: the bytes left make no more segments of at least %s", d.path, left, want, largo.FormatSize(minSegment))
		}
	}
	f, err := os.OpenFile(d.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, localError{err}
	}
	if err := allocate(f, st.Size); err != nil {
		f.Close()
		return nil, localError{fmt.Errorf("reserving %d bytes for %s: %w", st.Size, d.part, err)}
	}
	if err := saveState(d.part, st); err != nil {
		f.Close()
		return nil, err
	}
	run := &segmentRun{d: d, f: f, st: st}
	have := run.resume(bootID())
	d.prog.Begin(filepath.Base(d.path), st.Size, have)
	return run, nil
}

// resume makes the live segments, each starting where the state says it
// may resume during boot (bytes written but not synced are trusted only
// within the boot that wrote them), and records boot in the state. It
// returns the bytes already in the part file. Done stays as it was: only a
// sync makes bytes durable.
func (run *segmentRun) resume(boot string) int64 {
	sameBoot := boot != "" && run.st.Boot == boot
	run.st.Boot = boot
	run.segs = make([]*liveSeg, len(run.st.Segments))
	var have int64
	for i, s := range run.st.Segments {
		from := s.resumeFrom(sameBoot)
		run.segs[i] = &liveSeg{start: s.Start, end: s.End}
		run.segs[i].done.Store(from)
		run.st.Segments[i].Written = from
		have += from
	}
	return have
}

// fetch fetches every unfinished segment, at most Segments at a time, while
// the saver keeps the state, and at the end saves the state synced. It
// returns complete, or how the first segment to fail ended and why.
func (run *segmentRun) fetch(ctx context.Context) (outcome, error) {
	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	run.cancel = cancel
	var g errgroup.Group
	g.SetLimit(max(run.d.c.Segments, 1))
	stopSaver := make(chan struct{})
	var saver sync.WaitGroup
	saver.Go(func() { run.save(stopSaver) })
	for _, s := range run.segs {
		if s.done.Load() == s.end-s.start {
			continue
		}
		g.Go(func() error {
			if out, err := run.fetchSegment(gctx, s); err != nil {
				run.fail(out, err)
			}
			return nil
		})
	}
	g.Wait()
	close(stopSaver)
	saver.Wait()
	run.d.res.Moved += run.moved.Load()
	out, err := complete, error(nil)
	if run.err != nil {
		out, err = run.end, run.err
	}
	if serr := run.snapshot(true); err == nil && serr != nil {
		return failed, serr
	}
	return out, err
}

// fail records how the first segment to fail ended, and stops the others.
func (run *segmentRun) fail(out outcome, err error) {
	run.failed.Do(func() {
		run.end, run.err = out, err
		run.cancel(err)
	})
}

// save saves the state every saveEvery, or sooner once saveBytes more have
// arrived, syncing the part file first every syncEvery, until stop is
// closed. A failed save is logged: the download goes on.
func (run *segmentRun) save(stop <-chan struct{}) {
	t := time.NewTicker(saveCheck)
	defer t.Stop()
	lastSave, lastSync, savedMoved := time.Now(), time.Now(), int64(0)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if time.Since(lastSave) < saveEvery && run.moved.Load()-savedMoved < saveBytes {
			continue
		}
		lastSave, savedMoved = time.Now(), run.moved.Load()
		sync := time.Since(lastSync) >= syncEvery
		if sync {
			lastSync = time.Now()
		}
		if err := run.snapshot(sync); err != nil {
			run.d.c.logf("%s: saving the resume state: %v", run.d.path, err)
		}
	}
}

// snapshot saves the progress; with sync, it first makes the bytes written
// so far durable and counts them as done.
func (run *segmentRun) snapshot(sync bool) error {
	written := make([]int64, len(run.segs))
	for i, s := range run.segs {
		written[i] = s.done.Load() // read before the sync: covered by it
	}
	if sync {
		if err := run.f.Sync(); err != nil {
			return localError{err}
		}
	}
	for i := range run.segs {
		run.st.Segments[i].Written = written[i]
		if sync {
			run.st.Segments[i].Done = written[i]
		}
	}
	return saveState(run.d.part, run.st)
}

// verify checks the whole part file against the server's digest, if it
// sent one, and makes it the target.
func (run *segmentRun) verify() step {
	d, st := run.d, run.st
	if err := d.checkListed(st.Size, "received"); err != nil {
		return stopped(err)
	}
	if st.Digest != "" {
		h, err := hashFile(d.part, st.Size, st.Digest)
		if err != nil {
			return stopped(err)
		}
		if err := checkDigest(st.Digest, h.Sum(nil)); err != nil {
			return d.mismatch(err)
		}
		d.res.Verified = st.Digest
	}
	return stopped(d.finish(run.f, st, st.Size))
}

// fetchSegment fetches one segment to its end, retrying. It returns
// complete; or startOver when the whole download must start from zero; or
// failed with the error that ended the retries.
func (run *segmentRun) fetchSegment(ctx context.Context, s *liveSeg) (outcome, error) {
	r := run.d.c.retrier()
	for s.done.Load() < s.end-s.start {
		before := s.done.Load()
		out, err := run.attempt(ctx, s)
		switch {
		case out == startOver:
			return out, err
		case err == nil:
			continue
		}
		if s.done.Load() > before {
			r.progressed()
		}
		if err = r.again(ctx, err); err != nil {
			return failed, err
		}
	}
	return complete, nil
}

// attempt asks for the rest of segment s and writes the answer in place. It
// returns complete when the answer was whole, startOver when the remote
// file changed or ranges stopped working, or failed with why.
func (run *segmentRun) attempt(ctx context.Context, s *liveSeg) (outcome, error) {
	d, st := run.d, run.st
	actx, wd := d.c.watch(ctx)
	defer wd.stop()
	from := s.start + s.done.Load()
	resp, err := d.request(actx, st, fmt.Sprintf("bytes=%d-%d", from, s.end-1))
	if err != nil {
		return failed, cause(actx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		if st.changed(resp) {
			return startOver, errors.New("the remote file changed since the part file was written")
		}
		return startOver, errors.New("the server ignored the range request")
	case http.StatusRequestedRangeNotSatisfiable:
		return startOver, errors.New("the remote file changed: it is shorter than the part file")
	default:
		return failed, statusError(resp)
	}
	start, end, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err != nil || start != from || end != s.end-1 || total != st.Size {
		return failed, transient("asked for bytes %d-%d/%d, the server sent %q", from, s.end-1, st.Size, resp.Header.Get("Content-Range"))
	}
	w := &partWriter{w: io.NewOffsetWriter(run.f, from), count: func(n int64) { s.done.Add(n); run.moved.Add(n) }}
	n, err := io.CopyBuffer(w, &touchReader{r: resp.Body, w: wd, prog: d.prog}, make([]byte, copyBuf))
	if err != nil {
		return failed, cause(actx, err)
	}
	if n != s.end-from {
		return failed, transient("bytes %d-%d: the answer ended after %d bytes", from, s.end-1, n)
	}
	return complete, nil
}

package precompress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"largo"
	"largo/encode"
	"largo/ingest"
	"largo/record"
	"largo/sidecar"
)

// bufSize is the size of the pieces the encoders' output is stored in.
const bufSize = 256 << 10

// errChanged is the failure of a file modified while it was compressed.
var errChanged = errors.New("changed while being compressed; run again")

// errForeign is a file of its own under a sidecar's name: no sidecar is
// written over it.
var errForeign = errors.New("a file of its own has the sidecar's name")

// writer writes sidecars for one worker. It is used by one goroutine.
type writer struct {
	cfg     *Config
	records *sidecar.Checker
	buf     *bufio.Writer // between the encoder and the write
}

// write writes the sidecar of name in coding c, records it, and reports
// its size and whether it was kept. A stale sidecar it does not replace is
// removed. A file under the sidecar's name that is no sidecar largo wrote
// (not recorded) is left as it is, unless Config.AnySidecars: the error
// wraps errForeign.
func (s *writer) write(ctx context.Context, name string, c encode.Coding) (size int64, kept bool, err error) {
	store := s.cfg.Writes.Store()
	src, err := store.Open(ctx, name)
	if err != nil {
		return 0, false, err
	}
	defer src.Close()
	orig := src.Info()
	target := encode.Sidecar(name, c)
	cond, err := s.overwrite(ctx, target)
	if err != nil {
		return 0, false, err
	}
	w, err := s.cfg.Writes.Begin(ctx, ingest.Target{Name: target, Size: -1, Cond: cond, Protocol: "precompress", Source: orig.ETag})
	if err != nil {
		return 0, false, err
	}
	defer w.Abort() // does nothing once committed
	if err := s.encode(ctx, w, src, c); err != nil {
		return 0, false, err
	}
	now, err := store.Stat(ctx, name)
	if err != nil {
		return 0, false, err
	}
	if now.ETag != orig.ETag || now.Size != orig.Size || !now.ModTime.Equal(orig.ModTime) {
		return 0, false, fmt.Errorf("%s: %w", name, errChanged)
	}
	size = w.Written()
	if float64(size) > float64(orig.Size)*(1-MinSaving) {
		w.Abort()
		s.removeStale(ctx, target, orig)
		return size, false, nil
	}
	res, err := w.Commit(ctx)
	if err != nil {
		return 0, false, err
	}
	if err := s.record(ctx, name, orig, target, res.Info, c); err != nil {
		return 0, false, err
	}
	return size, true, nil
}

// overwrite returns the condition of a write of the sidecar target: that
// nothing is there, or that what is there is still the sidecar of largo's
// (or with Config.AnySidecars, any file) found now.
func (s *writer) overwrite(ctx context.Context, target string) (largo.Condition, error) {
	si, err := s.cfg.Writes.Store().Stat(ctx, target)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return largo.Condition{IfNoneMatch: true}, nil
	case err != nil:
		return largo.Condition{}, err
	case si.IsDir:
		return largo.Condition{}, fmt.Errorf("%s: %w", target, largo.ErrIsDir)
	case si.ETag == "":
		return largo.Condition{}, fmt.Errorf("%s: no ETag to write over it safely", target)
	case !s.cfg.AnySidecars && !s.ours(ctx, target, si):
		return largo.Condition{}, fmt.Errorf("%s: %w; left as it is", target, errForeign)
	}
	return largo.Condition{IfMatch: si.ETag}, nil
}

// ours reports whether si, the file target, is a sidecar largo recorded
// (from whatever version of its original).
func (s *writer) ours(ctx context.Context, target string, si largo.Info) bool {
	_, ours, _ := s.records.Of(ctx, target, si)
	return ours
}

// record names the sidecar target just committed (sin), whose own
// record says it was made from orig (the pipeline wrote it, with the
// write's Source), in the record of orig, the file name: what follows it
// when it goes. A sidecar that cannot be so named would be left behind
// when its original goes: it is removed again.
func (s *writer) record(ctx context.Context, name string, orig largo.Info, target string, sin largo.Info, c encode.Coding) error {
	files := s.records.Files()
	if files == nil {
		return nil // a store without records: only --sidecars any serves them
	}
	_, err := files.Update(ctx, name, func(rec *record.File, exists bool) (record.Change, error) {
		if !exists || rec.ETag != orig.ETag {
			// The original has no record of its version (it arrived
			// another way): it gets one, with the digest unknown.
			*rec = record.File{Name: name, ETag: orig.ETag, Size: orig.Size, Owner: rec.Owner}
		}
		if slices.Contains(rec.Sidecars, c.Ext()) {
			return record.Keep, nil
		}
		rec.Sidecars = append(rec.Sidecars, c.Ext())
		return record.Write, nil
	})
	if err == nil {
		return nil
	}
	cond := largo.Condition{IfMatch: sin.ETag}
	if rm, rerr := s.cfg.Writes.CheckRemove(ctx, target, cond, nil); rerr == nil {
		rm.Remove(context.WithoutCancel(ctx), target, largo.RemoveOptions{Condition: cond})
		s.cfg.Writes.Forget(ctx, target)
	}
	return fmt.Errorf("recording %s: %w", target, err)
}

// encode compresses src into w.
func (s *writer) encode(ctx context.Context, w *ingest.Write, src io.Reader, c encode.Coding) error {
	s.buf.Reset(w)
	enc, err := encode.NewWriter(s.buf, c, s.cfg.Level)
	if err != nil {
		return err
	}
	if _, err := io.Copy(enc, &reader{ctx: ctx, r: src, read: s.cfg.Read}); err != nil {
		enc.Close()
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return s.buf.Flush()
}

// removeStale removes the sidecar target when it was made from another
// version of the original orig, and so would never be served: a sidecar
// that is no longer worth writing goes, with its record. Only a recorded
// sidecar of largo's is removed (with Config.AnySidecars, any file older
// than the original), conditional on its ETag, so that one written
// meanwhile stays. Failing to remove it is no failure of the task: a
// stale sidecar is ignored when serving.
func (s *writer) removeStale(ctx context.Context, target string, orig largo.Info) {
	si, err := s.cfg.Writes.Store().Stat(ctx, target)
	if err != nil || si.IsDir || si.ETag == "" {
		return
	}
	if fresh, _ := s.records.Recorded(ctx, target, si, orig.ETag); fresh {
		return
	}
	ours := s.ours(ctx, target, si)
	if !ours && (!s.cfg.AnySidecars || !si.ModTime.Before(orig.ModTime)) {
		return
	}
	cond := largo.Condition{IfMatch: si.ETag}
	rm, err := s.cfg.Writes.CheckRemove(ctx, target, cond, nil)
	if err != nil {
		return
	}
	if rm.Remove(ctx, target, largo.RemoveOptions{Condition: cond}) == nil {
		s.cfg.Writes.Forget(ctx, target)
	}
}

// reader reads a source for compression: it reports progress and stops
// when the run is cancelled.
type reader struct {
	ctx  context.Context
	r    io.Reader
	read func(int64)
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(p)
	if n > 0 && r.read != nil {
		r.read(int64(n))
	}
	return n, err
}

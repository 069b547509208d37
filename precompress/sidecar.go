package precompress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"largo"
	"largo/encode"
	"largo/ingest"
)

// bufSize is the size of the pieces the encoders' output is stored in.
const bufSize = 256 << 10

// errChanged is the failure of a file modified while it was compressed.
var errChanged = errors.New("changed while being compressed; run again")

// sidecar writes sidecars for one worker. It is used by one goroutine.
type sidecar struct {
	cfg *Config
	buf *bufio.Writer // between the encoder and the write
}

// write writes the sidecar of name in coding c and reports its size and
// whether it was kept. A stale sidecar it does not replace is removed.
func (s *sidecar) write(ctx context.Context, name string, c encode.Coding) (size int64, kept bool, err error) {
	store := s.cfg.Writes.Store()
	src, err := store.Open(ctx, name)
	if err != nil {
		return 0, false, err
	}
	defer src.Close()
	orig := src.Info()
	target := encode.Sidecar(name, c)
	w, err := s.cfg.Writes.Begin(ctx, ingest.Target{Name: target, Size: -1})
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
	if _, err := w.Commit(ctx); err != nil {
		return 0, false, err
	}
	return size, true, nil
}

// encode compresses src into w.
func (s *sidecar) encode(ctx context.Context, w *ingest.Write, src io.Reader, c encode.Coding) error {
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

// removeStale removes the sidecar target when it is older than the
// original orig, and so would never be served: a sidecar that is no
// longer worth writing goes. The removal is conditional on the stale
// sidecar's ETag, so that one written meanwhile stays. Failing to remove
// it is no failure of the task: a stale sidecar is ignored when serving.
func (s *sidecar) removeStale(ctx context.Context, target string, orig largo.Info) {
	si, err := s.cfg.Writes.Store().Stat(ctx, target)
	if err != nil || si.IsDir || si.ETag == "" || !si.ModTime.Before(orig.ModTime) {
		return
	}
	cond := largo.Condition{IfMatch: si.ETag}
	rm, err := s.cfg.Writes.CheckRemove(ctx, target, cond, nil)
	if err != nil {
		return
	}
	rm.Remove(ctx, target, largo.RemoveOptions{Condition: cond})
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

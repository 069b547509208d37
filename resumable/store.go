package resumable

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tus/tusd/v2/pkg/filestore"
	tusd "github.com/tus/tusd/v2/pkg/handler"
)

// dataStore is tusd's filestore with what largo adds: upload IDs checked
// before they reach a path, errors that name no path, the pending-bytes
// count, and the knowledge of which uploads are being written (which
// expiry leaves alone).
type dataStore struct {
	fs filestore.FileStore
	h  *Handler
}

var (
	_ tusd.DataStore               = (*dataStore)(nil)
	_ tusd.TerminaterDataStore     = (*dataStore)(nil)
	_ tusd.LengthDeferrerDataStore = (*dataStore)(nil)
	_ tusd.TerminatableUpload      = (*upload)(nil)
	_ tusd.LengthDeclarableUpload  = (*upload)(nil)
)

// validID reports whether id can be an upload's ID: tusd makes them of
// hex digits; anything else (a slash, a dot) never reaches the filesystem.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func (s *dataStore) NewUpload(ctx context.Context, info tusd.FileInfo) (tusd.Upload, error) {
	info.ID = "" // always tusd's own
	u, err := s.fs.NewUpload(ctx, info)
	if err != nil {
		return nil, s.h.storeErr("create", err)
	}
	in, _ := u.GetInfo(ctx)
	return &upload{Upload: u, s: s, id: in.ID}, nil
}

func (s *dataStore) GetUpload(ctx context.Context, id string) (tusd.Upload, error) {
	if !validID(id) {
		return nil, tusd.ErrNotFound
	}
	u, err := s.fs.GetUpload(ctx, id)
	if errors.Is(err, tusd.ErrNotFound) {
		return nil, tusd.ErrNotFound
	}
	if err != nil {
		return nil, s.h.storeErr("open", err)
	}
	return &upload{Upload: u, s: s, id: id}, nil
}

func (s *dataStore) AsTerminatableUpload(u tusd.Upload) tusd.TerminatableUpload {
	return u.(*upload)
}

func (s *dataStore) AsLengthDeclarableUpload(u tusd.Upload) tusd.LengthDeclarableUpload {
	return u.(*upload)
}

func (s *dataStore) binPath(id string) string  { return filepath.Join(s.fs.Path, id) }
func (s *dataStore) infoPath(id string) string { return filepath.Join(s.fs.Path, id+".info") }

// remove deletes what is left of an upload.
func (s *dataStore) remove(id string) {
	for _, p := range []string{s.binPath(id), s.infoPath(id), s.hashPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.h.log.Warn("removing an upload's state", "id", id, "err", err)
		}
	}
}

// scan removes what a crash left half-made (bytes without their info, or
// the reverse) and returns the bytes held by the uploads that remain.
func (s *dataStore) scan() (int64, error) {
	ents, err := os.ReadDir(s.fs.Path)
	if err != nil {
		return 0, err
	}
	has := map[string]bool{}
	for _, e := range ents {
		has[e.Name()] = true
	}
	var pending int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sha256") {
			continue // goes with its upload
		}
		id, isInfo := strings.CutSuffix(e.Name(), ".info")
		switch {
		case isInfo && !has[id], !isInfo && !has[id+".info"]:
			s.remove(id)
		case !isInfo:
			if fi, err := e.Info(); err == nil {
				pending += fi.Size()
			}
		}
	}
	return pending, nil
}

// upload is one of tusd's uploads, watched.
type upload struct {
	tusd.Upload
	s  *dataStore
	id string
}

func (u *upload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	h := u.s.h
	h.begin(u.id)
	defer h.end(u.id)
	var tee *countingTee
	if sum := u.s.loadHash(u.id, offset); sum != nil {
		tee = &countingTee{r: src, h: sum}
		src = tee
	}
	n, err := u.Upload.WriteChunk(ctx, offset, src)
	if tee != nil && tee.n == n {
		u.s.saveHash(u.id, offset+n, tee.h)
	} else {
		u.s.saveHash(u.id, 0, nil) // the finish will read the file
	}
	h.obs.PendingBytes(n)
	if err != nil {
		return n, h.storeErr("write", err)
	}
	return n, nil
}

func (u *upload) Terminate(ctx context.Context) error {
	info, _ := u.GetInfo(ctx)
	if err := u.s.fs.AsTerminatableUpload(u.Upload).Terminate(ctx); err != nil {
		return u.s.h.storeErr("terminate", err)
	}
	u.s.saveHash(u.id, 0, nil)
	u.s.h.obs.PendingBytes(-info.Offset)
	u.s.h.obs.UploadEnded("aborted")
	return nil
}

func (u *upload) DeclareLength(ctx context.Context, length int64) error {
	info, _ := u.GetInfo(ctx)
	if t, err := u.s.h.parseTarget(info.MetaData); err == nil {
		if err := u.s.h.checkSpace(ctx, t.name, length-info.Offset); err != nil {
			return err
		}
	}
	if err := u.s.fs.AsLengthDeclarableUpload(u.Upload).DeclareLength(ctx, length); err != nil {
		return u.s.h.storeErr("declare length", err)
	}
	return nil
}

// storeErr turns a filesystem error into the error a client sees: 507 for
// a full disk, else a 500 that names no path, with the cause logged.
func (h *Handler) storeErr(what string, err error) error {
	var te tusd.Error
	if errors.As(err, &te) {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		h.log.Warn("resumable upload: disk full", "step", what, "err", err)
		return tusError("ERR_INSUFFICIENT_STORAGE", "insufficient storage", http.StatusInsufficientStorage)
	}
	return h.internal(what, err)
}

// begin and end bracket the writing of a chunk.
func (h *Handler) begin(id string) {
	h.mu.Lock()
	h.active[id]++
	h.mu.Unlock()
}

func (h *Handler) end(id string) {
	h.mu.Lock()
	if h.active[id]--; h.active[id] <= 0 {
		delete(h.active, id)
	}
	h.mu.Unlock()
}

// Expire removes the uploads that have received no byte for Config.Expiry
// (none is being written), frees their space, and returns how many it
// removed and the bytes freed.
func (h *Handler) Expire() (n int, freed int64, err error) {
	ents, err := os.ReadDir(h.store.fs.Path)
	if err != nil {
		return 0, 0, err
	}
	now := h.cfg.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".info")
		if !ok || h.active[id] > 0 {
			continue
		}
		last, size := time.Time{}, int64(0)
		for _, p := range []string{h.store.infoPath(id), h.store.binPath(id)} {
			if fi, err := os.Stat(p); err == nil {
				last = maxTime(last, fi.ModTime())
				if p == h.store.binPath(id) {
					size = fi.Size()
				}
			}
		}
		if now.Sub(last) < h.cfg.Expiry {
			continue
		}
		h.store.remove(id)
		h.obs.PendingBytes(-size)
		h.obs.UploadEnded("aborted")
		h.log.Info("resumable upload expired", "id", id, "bytes", size, "idle", now.Sub(last).Round(time.Second))
		n++
		freed += size
	}
	return n, freed, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Run calls Expire at a quarter of the expiry (between a second and a
// quarter of an hour) until ctx is done.
func (h *Handler) Run(ctx context.Context) {
	every := min(max(h.cfg.Expiry/4, time.Second), 15*time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, _, err := h.Expire(); err != nil {
			h.log.Warn("expiring resumable uploads", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

package resumable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/ingest"
)

// dataStore is the staging's DataStore with what largo adds: upload IDs
// checked before they reach a path or a key, an upload found only by its
// owner (owner.go), errors that name no path,
// the pending-bytes count, the hash of each upload as it arrives, and the
// knowledge of which uploads are being written (which expiry leaves
// alone).
type dataStore struct {
	st Staging
	h  *Handler
}

var (
	_ tusd.DataStore               = (*dataStore)(nil)
	_ tusd.TerminaterDataStore     = (*dataStore)(nil)
	_ tusd.LengthDeferrerDataStore = (*dataStore)(nil)
	_ tusd.ConcaterDataStore       = (*dataStore)(nil)
	_ tusd.TerminatableUpload      = (*upload)(nil)
	_ tusd.LengthDeclarableUpload  = (*upload)(nil)
	_ tusd.ConcatableUpload        = (*upload)(nil)
)

// maxIDLen bounds an upload ID: S3 upload IDs are long (AWS's run to
// hundreds of characters), and an ID travels in a URL path.
const maxIDLen = 1024

// validID reports whether id can be an upload's ID. The folder staging
// makes them of hex digits; tusd's S3 store makes them of an object ID
// (hex digits), a plus and the multipart upload's ID, whose shape is the
// S3 server's: AWS's are long and hold dots, underscores and tildes. The
// part before the plus, which names files and keys, has no dot, so that
// an ID can never be another upload's info ("x.info") or a dot element;
// nothing in an ID is a slash, a backslash, a space or an escape.
func validID(id string) bool {
	head, tail, plus := strings.Cut(id, "+")
	if head == "" || len(id) > maxIDLen || plus && tail == "" {
		return false
	}
	for _, c := range head {
		if !idChar(c) {
			return false
		}
	}
	for _, c := range tail {
		if !idChar(c) && c != '.' && c != '~' && c != '=' && c != '+' {
			return false
		}
	}
	return true
}

func idChar(c rune) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_'
}

func (s *dataStore) NewUpload(ctx context.Context, info tusd.FileInfo) (tusd.Upload, error) {
	info.ID = "" // always tusd's own
	u, err := s.st.NewUpload(ctx, info)
	if err != nil {
		return nil, s.h.storeErr("create", err)
	}
	in, _ := u.GetInfo(ctx)
	if info.IsFinal && s.h.state != nil {
		b, _ := json.Marshal(concatRecord{Final: in.ID})
		if err := s.h.state.Put(ctx, concatKey(info.PartialUploads), b); err != nil {
			s.h.log.Warn("recording a final upload", "id", in.ID, "err", err)
		}
	}
	return s.wrap(u, info), nil
}

// wrap watches u, an upload of info.
func (s *dataStore) wrap(u tusd.Upload, info tusd.FileInfo) *upload {
	in, _ := u.GetInfo(context.Background())
	up := &upload{Upload: u, s: s, id: in.ID}
	if pl, ok := placementOf(info); ok {
		up.pl = &pl
	}
	return up
}

func (s *dataStore) GetUpload(ctx context.Context, id string) (tusd.Upload, error) {
	if !validID(id) || isGroup(id) {
		return nil, tusd.ErrNotFound
	}
	u, err := s.st.GetUpload(ctx, id)
	if errors.Is(err, tusd.ErrNotFound) {
		return nil, tusd.ErrNotFound
	}
	if err != nil {
		return nil, s.h.storeErr("open", err)
	}
	// Another principal's upload is, to the request, no upload at all.
	info, err := u.GetInfo(ctx)
	if errors.Is(err, tusd.ErrNotFound) {
		return nil, tusd.ErrNotFound
	}
	if err != nil {
		return nil, s.h.storeErr("open", err)
	}
	if !reaches(ctx, info.MetaData[keyOwner]) {
		return nil, tusd.ErrNotFound
	}
	up := &upload{Upload: u, s: s, id: id}
	if pl, ok := placementOf(info); ok {
		up.pl = &pl
	}
	return up, nil
}

func (s *dataStore) AsTerminatableUpload(u tusd.Upload) tusd.TerminatableUpload {
	return u.(*upload)
}

func (s *dataStore) AsLengthDeclarableUpload(u tusd.Upload) tusd.LengthDeclarableUpload {
	return u.(*upload)
}

func (s *dataStore) AsConcatableUpload(u tusd.Upload) tusd.ConcatableUpload {
	return u.(*upload)
}

// remove deletes what is left of an upload.
func (s *dataStore) remove(ctx context.Context, id string) {
	if err := s.st.Remove(ctx, id); err != nil {
		s.h.log.Warn("removing an upload's state", "id", id, "err", err)
	}
}

// upload is one of tusd's uploads, watched.
type upload struct {
	tusd.Upload
	s  *dataStore
	id string
	pl *placement // a placed partial's place (concat.go), or nil
}

func (u *upload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	h := u.s.h
	le, err := h.leases.take(ctx, u.id)
	if errors.Is(err, errBusy) {
		return 0, err
	}
	if err != nil {
		return 0, h.storeErr("lease", err)
	}
	defer le.release()
	if le != nil {
		// Another server may have appended before the lease was ours:
		// the upload is read again, and appended to only where it ends.
		fresh, err := u.s.st.GetUpload(ctx, u.id)
		if err != nil {
			return 0, h.storeErr("open", err)
		}
		info, err := fresh.GetInfo(ctx)
		if err != nil {
			return 0, h.storeErr("open", err)
		}
		if info.Offset != offset {
			return 0, &movedError{offset: info.Offset}
		}
		u.Upload = fresh
		src = &leasedReader{r: src, le: le}
	}
	h.begin(u.id)
	defer h.end(u.id)
	info, err := u.Upload.GetInfo(ctx)
	if err != nil {
		return 0, h.storeErr("open", err)
	}
	info.Offset = offset
	chunk, err := h.admitChunk(ctx, info, src)
	if err != nil {
		return 0, h.tusErr("write", err)
	}
	defer chunk.End()
	src = chunk
	if u.pl != nil {
		// A placed partial's bytes are hashed with its group's (prefix.go).
		n, err := u.Upload.WriteChunk(ctx, offset, src)
		h.obs.PendingBytes(n)
		return n, h.chunkErr(err, chunk)
	}
	var tee *countingTee
	if sum := u.s.loadHash(ctx, u.id, offset); sum != nil {
		tee = &countingTee{r: src, h: sum}
		src = tee
	}
	n, err := u.Upload.WriteChunk(ctx, offset, src)
	// The state is saved even when the client left: the bytes it sent
	// are stored.
	ctx = context.WithoutCancel(ctx)
	if tee != nil && tee.n == n {
		u.s.saveHash(ctx, u.id, offset+n, tee.h)
	} else {
		u.s.saveHash(ctx, u.id, 0, nil) // the finish will read the bytes
	}
	h.obs.PendingBytes(n)
	return n, h.chunkErr(err, chunk)
}

// chunkErr is the error of a chunk the staging stored with err: the
// staging's, else why the chunk stopped taking bytes, if it did.
func (h *Handler) chunkErr(err error, chunk *ingest.Chunk) error {
	switch {
	case err != nil:
		return h.storeErr("write", err)
	case chunk.Err() != nil:
		return h.tusErr("write", chunk.Err())
	}
	return nil
}

// FinishUpload ends the upload in the staging; a placed partial then
// records itself for its group's hasher.
func (u *upload) FinishUpload(ctx context.Context) error {
	if err := u.Upload.FinishUpload(ctx); err != nil {
		return u.s.h.storeErr("finish", err)
	}
	if u.pl != nil {
		if info, err := u.Upload.GetInfo(ctx); err == nil && info.Offset == info.Size {
			u.s.h.pieceDone(context.WithoutCancel(ctx), info, *u.pl)
		}
	}
	return nil
}

// ConcatUploads joins the partials a final upload lists into it
// (concat.go).
func (u *upload) ConcatUploads(ctx context.Context, _ []tusd.Upload) error {
	info, err := u.Upload.GetInfo(ctx)
	if err != nil {
		return u.s.h.storeErr("concat", err)
	}
	return u.s.h.concat(ctx, info)
}

func (u *upload) Terminate(ctx context.Context) error {
	// Not while another server appends to it.
	le, err := u.s.h.leases.take(ctx, u.id)
	if errors.Is(err, errBusy) {
		return err
	}
	if err != nil {
		return u.s.h.storeErr("lease", err)
	}
	defer le.release()
	info, _ := u.GetInfo(ctx)
	if err := u.s.st.AsTerminatableUpload(u.Upload).Terminate(ctx); err != nil {
		return u.s.h.storeErr("terminate", err)
	}
	u.s.saveHash(ctx, u.id, 0, nil)
	u.s.h.release(u.id)
	u.s.h.obs.PendingBytes(-info.Offset)
	u.s.h.obs.UploadEnded("aborted")
	return nil
}

func (u *upload) DeclareLength(ctx context.Context, length int64) error {
	info, _ := u.GetInfo(ctx)
	if t, err := parseTarget(info.MetaData); err == nil {
		if err := u.s.h.cfg.Writes.CheckChunk(ctx, t.Name, info.Offset, length-info.Offset); err != nil {
			return u.s.h.tusErr("declare length", err)
		}
	}
	if err := u.s.st.AsLengthDeclarableUpload(u.Upload).DeclareLength(ctx, length); err != nil {
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
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		h.log.Warn("resumable upload: disk full", "step", what, "err", err)
		err = fmt.Errorf("%w: %w", largo.ErrNoSpace, err)
	case errors.Is(err, syscall.EFBIG):
		err = fmt.Errorf("larger than the file system takes a file: %w: %w", largo.ErrTooLarge, err)
	}
	return h.tusErr(what, err)
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
// (none is being written through this server), frees their space, and
// returns how many it removed and the bytes freed.
func (h *Handler) Expire() (n int, freed int64, err error) {
	ctx := context.Background()
	now := h.cfg.Now()
	for up, err := range h.store.st.Idle(ctx, now.Add(-h.cfg.Expiry)) {
		if err != nil {
			return n, freed, err
		}
		if isGroup(up.ID) {
			// A group's staged file: its partials, idle as long, go too.
			h.forgetGroup(ctx, up.ID)
			continue
		}
		// Not while another server appends to it.
		le, err := h.leases.take(ctx, up.ID)
		if err != nil {
			continue
		}
		h.mu.Lock()
		if h.active[up.ID] > 0 {
			h.mu.Unlock()
			le.release()
			continue
		}
		err = h.store.st.Remove(ctx, up.ID)
		h.mu.Unlock()
		le.release()
		if err != nil {
			h.log.Warn("removing an expired upload", "id", up.ID, "err", err)
			continue
		}
		h.release(up.ID)
		h.obs.PendingBytes(-up.Size)
		h.obs.UploadEnded("aborted")
		h.log.Info("resumable upload expired", "id", up.ID, "bytes", up.Size, "idle", now.Sub(up.Last).Round(time.Second))
		n++
		freed += up.Size
	}
	h.sweepHolds(now.Add(-h.cfg.Expiry))
	h.expireRecords(ctx, now.Add(-h.cfg.Expiry))
	if _, err := h.leases.sweep(ctx); err != nil {
		h.log.Warn("sweeping the leases of appends", "err", err)
	}
	return n, freed, nil
}

// expireRecords forgets the finished uploads placed before before, and
// the records of parallel uploads (concat.go, prefix.go) written before
// it.
func (h *Handler) expireRecords(ctx context.Context, before time.Time) {
	if h.state == nil {
		return
	}
	for _, prefix := range []string{doneKey(""), "tus-concat/", "tus-group/"} {
		var old []string
		for rec, err := range h.state.List(ctx, prefix) {
			if err != nil {
				h.log.Warn("listing the records of uploads", "err", err)
				return
			}
			if rec.ModTime.Before(before) {
				old = append(old, rec.Key)
			}
		}
		for _, k := range old {
			if err := h.state.Delete(ctx, k); err != nil {
				h.log.Warn("forgetting the record of an upload", "key", k, "err", err)
			}
		}
	}
}

// Run calls Expire at a quarter of the expiry (between a second and a
// quarter of an hour) until ctx is done; then it stops the hashing of
// parallel uploads' prefixes (prefix.go), which a final, or the next
// server, takes up where it stopped, and waits for it.
func (h *Handler) Run(ctx context.Context) {
	defer h.stopHashers()
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

package s3

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"largo"
)

// S3's own limits.
const (
	maxSinglePut = 5 << 30 // the largest body of one PUT
	maxCopyPart  = 5 << 30 // the largest part of a server-side copy
	maxParts     = 10000   // parts of one multipart upload
	maxObject    = 5 << 40 // the largest object
	abortTimeout = 30 * time.Second
)

var (
	_ largo.Creator = (*Store)(nil)
	_ largo.Copier  = (*Store)(nil)
	_ largo.Adopter = (*Store)(nil)
	_ largo.Remover = (*Store)(nil)
	_ largo.Upload  = (*upload)(nil)
)

// errAborted ends the store request of an aborted upload.
var errAborted = errors.New("upload aborted")

// Create implements largo.Creator. How the bytes travel depends on what is
// known of their length (see the package documentation): one streamed PUT
// whose last byte is held back until Commit, streamed parts of a multipart
// upload completed at Commit, or, for a length not announced, parts
// buffered in memory. Whatever the way, nothing is visible at the key
// before Commit, and Abort leaves nothing behind.
func (s *Store) Create(ctx context.Context, name string, opt largo.CreateOptions) (largo.Upload, error) {
	if err := s.checkTarget(ctx, name, opt); err != nil {
		return nil, err
	}
	if opt.Size > maxObject {
		return nil, fmt.Errorf("%s: %d bytes, more than an object may hold: %w", name, opt.Size, largo.ErrTooLarge)
	}
	u := s.newUpload(ctx, name, opt)
	switch {
	case opt.Size < 0:
		u.send = &bufferedParts{mp: &multipart{u: u}}
	case opt.Size <= s.maxSingle && (s.trailers.Load() || opt.Size == 0):
		u.send = &streamPut{u: u, cond: s.serverCond(opt.Condition), size: opt.Size}
	case opt.Size <= s.maxSingle:
		// Without a trailer, a body cut short might be stored: it goes
		// as the one part of a multipart upload, completed at Commit.
		u.send = &streamParts{mp: &multipart{u: u}, size: opt.Size, partLen: max(opt.Size, 1)}
	default:
		u.send = &streamParts{mp: &multipart{u: u}, size: opt.Size, partLen: max(s.partSize, (opt.Size+maxParts-1)/maxParts)}
	}
	return u, nil
}

func (s *Store) newUpload(ctx context.Context, name string, opt largo.CreateOptions) *upload {
	// The store requests outlive the client's request, whose body may be
	// all in when it leaves: Abort ends them.
	uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &upload{s: s, name: name, key: s.key(name), opt: opt, ctx: uctx, cancel: cancel}
}

// Adopt implements largo.Adopter: staged, the name of an object under
// largo.StateDir (a finished resumable upload), becomes an Upload whose
// Commit copies it to name inside the store, without its bytes passing
// through largo, and then removes it. staged has been checked by the
// caller, the write pipeline.
func (s *Store) Adopt(ctx context.Context, name, staged string, opt largo.CreateOptions) (largo.Upload, error) {
	return s.copyUpload(ctx, name, staged, opt, false)
}

// copyUpload is an Upload that copies staged to name at its commit, and
// unless keep then removes staged.
func (s *Store) copyUpload(ctx context.Context, name, staged string, opt largo.CreateOptions, keep bool) (largo.Upload, error) {
	if err := s.checkTarget(ctx, name, opt); err != nil {
		return nil, err
	}
	src, err := s.headKey(ctx, s.key(staged))
	if err != nil {
		return nil, mapErr(staged, err)
	}
	opt.Size = src.size
	u := s.newUpload(ctx, name, opt)
	u.n = src.size
	u.send = &copySender{u: u, src: s.key(staged), size: src.size, etag: src.etag, keep: keep}
	return u, nil
}

// Copy implements largo.Copier: a server-side copy of src, committed as
// Adopt's (one CopyObject, or a multipart upload of copied ranges above
// the largest single copy or under a condition), but src stays.
func (s *Store) Copy(ctx context.Context, name, src string, opt largo.CreateOptions) (largo.Upload, error) {
	return s.copyUpload(ctx, name, src, opt, true)
}

// checkTarget refuses early what the commit would refuse or get wrong: the
// root, a folder at the target (keys under the name), a file where the
// target's folder should be, and a missing folder under NoMkdir.
func (s *Store) checkTarget(ctx context.Context, name string, opt largo.CreateOptions) error {
	if name == "" {
		return fmt.Errorf("the root: %w", largo.ErrIsDir)
	}
	if opt.Known != nil {
		return nil // the caller looked at the target and its folder just now
	}
	if _, err := s.head(ctx, name); err != nil && !errors.Is(err, largo.ErrNotFound) {
		return err // a folder (ErrIsDir), or the store failing
	}
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	_, err := s.head(ctx, dir)
	switch {
	case err == nil:
		return fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
	case errors.Is(err, largo.ErrIsDir):
		return nil
	case errors.Is(err, largo.ErrNotFound) && !opt.NoMkdir:
		return nil // folders need no making: they are key prefixes
	}
	return fmt.Errorf("folder %s: %w", dir, err)
}

// upload is a write in progress to one key.
type upload struct {
	s      *Store
	name   string
	key    string
	opt    largo.CreateOptions
	ctx    context.Context // of the store requests; canceled by Abort
	cancel context.CancelFunc
	n      int64
	send   sender
	err    error // the first failure, returned by later writes
	done   bool
}

// A sender carries an upload's bytes to the store in one of the ways
// (send.go). Its write takes the bytes in order; finish sends what is
// left and makes the object visible at its key under cond; abort ends
// every request and leaves nothing visible.
type sender interface {
	write(p []byte) error
	finish(ctx context.Context, cond largo.Condition) (written, error)
	abort()
}

func (u *upload) Write(p []byte) (int, error) {
	switch {
	case u.done:
		return 0, errors.New("write to a finished upload")
	case u.err != nil:
		return 0, u.err
	case u.opt.Size >= 0 && u.n+int64(len(p)) > u.opt.Size:
		u.err = fmt.Errorf("%s: more than the %d bytes announced", u.name, u.opt.Size)
		return 0, u.err
	}
	if err := u.send.write(p); err != nil {
		u.err = u.sendErr(u.ctx, u.opt.Condition, err)
		return 0, u.err
	}
	u.n += int64(len(p))
	return len(p), nil
}

// Commit implements largo.Upload. The server applies cond itself, in the
// request that makes the object visible; where it cannot (one instance),
// this process checks cond under the key's lock and writes before it
// lets go.
func (u *upload) Commit(ctx context.Context, cond largo.Condition) (largo.Info, bool, error) {
	if u.done {
		return largo.Info{}, false, errors.New("commit of a finished upload")
	}
	in, created, err := u.commit(ctx, cond)
	if err != nil {
		u.Abort()
		return largo.Info{}, false, err
	}
	u.done = true
	u.cancel()
	return in, created, nil
}

func (u *upload) commit(ctx context.Context, cond largo.Condition) (largo.Info, bool, error) {
	switch {
	case u.err != nil:
		return largo.Info{}, false, u.err
	case u.opt.Size >= 0 && u.n != u.opt.Size:
		return largo.Info{}, false, fmt.Errorf("%s: the body ended at %d of the %d bytes announced", u.name, u.n, u.opt.Size)
	}
	if st, ok := u.send.(interface{ settle() error }); ok && !u.s.shared() && cond != (largo.Condition{}) {
		if err := st.settle(); err != nil {
			return largo.Info{}, false, writeErr(u.name, largo.Condition{}, err)
		}
	}
	unlock, err := u.s.lockCond(ctx, u.name, u.key, cond)
	if err != nil {
		return largo.Info{}, false, err
	}
	defer unlock()
	created, err := u.created(ctx, cond)
	if err != nil {
		return largo.Info{}, false, err
	}
	sc := u.s.serverCond(cond)
	w, err := u.send.finish(ctx, sc)
	if err != nil {
		return largo.Info{}, false, u.sendErr(ctx, sc, err)
	}
	mod := w.mod
	if mod.IsZero() {
		mod = time.Now()
	}
	return largo.Info{Name: path.Base(u.name), Size: u.n, ModTime: mod, ETag: quoteETag(w.etag)}, created, nil
}

// sendErr wraps the error of a request that sends the upload under cond.
// A server may refuse a condition before it has read the whole body and
// close the connection, which the client then meets as a reset while
// sending, not as the server's answer: when a conditional request failed
// without an answer, the condition is checked again, and the write fails
// as the precondition it broke.
func (u *upload) sendErr(ctx context.Context, cond largo.Condition, err error) error {
	if answered(err) || ctx.Err() != nil || (!cond.IfNoneMatch && cond.IfMatch == "") {
		return writeErr(u.name, cond, err)
	}
	o, herr := u.s.headKey(ctx, u.key)
	missing := herr != nil && errors.Is(mapErr(u.name, herr), largo.ErrNotFound)
	switch {
	case herr == nil && cond.IfNoneMatch,
		herr == nil && cond.IfMatch != "" && cond.IfMatch != "*" && quoteETag(o.etag) != quoteETag(cond.IfMatch),
		missing && cond.IfMatch != "":
		return fmt.Errorf("%s: %w (the store cut the request: %v)", u.name, largo.ErrPrecondition, err)
	}
	return writeErr(u.name, cond, err)
}

// created tells, just before the commit, whether no file is at the
// target: certain under a condition, else asked of the store (a replacement
// by another writer in between makes the answer stale, not wrong).
func (u *upload) created(ctx context.Context, cond largo.Condition) (bool, error) {
	switch {
	case cond.IfNoneMatch:
		return true, nil
	case cond.IfMatch != "":
		return false, nil
	case u.opt.Known != nil:
		return *u.opt.Known == (largo.Info{}), nil // as the caller found it
	}
	_, err := u.s.headKey(ctx, u.key)
	if err == nil {
		return false, nil
	}
	if err = mapErr(u.name, err); errors.Is(err, largo.ErrNotFound) {
		return true, nil
	}
	return false, err
}

func (u *upload) Abort() error {
	if u.done {
		return nil
	}
	u.done = true
	u.cancel()
	u.send.abort()
	return nil
}

// conditions returns the If-None-Match and If-Match of the request that
// makes the upload's object visible under cond. If-Match: * (any version)
// is sent as the ETag of the version there now, since not every server
// takes the star: a replacement in between then fails the condition,
// which errs on the safe side.
func (u *upload) conditions(ctx context.Context, cond largo.Condition) (conds, error) {
	if cond.IfMatch == "*" {
		o, err := u.s.headKey(ctx, u.key)
		if err != nil {
			return conds{}, writeErr(u.name, cond, err)
		}
		if o.etag != "" {
			cond.IfMatch = o.etag
		}
	}
	return condsOf(cond), nil
}

// conds are the condition fields of a request, nil for none.
type conds struct{ ifNoneMatch, ifMatch *string }

// condsOf returns the fields of cond, sent as they are.
func condsOf(cond largo.Condition) conds {
	var c conds
	if cond.IfNoneMatch {
		c.ifNoneMatch = aws.String("*")
	}
	if cond.IfMatch != "" {
		c.ifMatch = aws.String(cond.IfMatch)
	}
	return c
}

// writeErr wraps an error met while writing name under cond in the largo
// error kind it means.
func writeErr(name string, cond largo.Condition, err error) error {
	if code, _, _, ok := apiError(err); ok {
		switch code {
		case "ObjectParentIsFile":
			return fmt.Errorf("%s: %w: %w", name, largo.ErrNotDir, err)
		case "ExistingObjectIsDirectory":
			return fmt.Errorf("%s: %w: %w", name, largo.ErrIsDir, err)
		case "EntityTooLarge":
			return fmt.Errorf("%s: %w: %w", name, largo.ErrTooLarge, err)
		case "NoSuchUpload":
			// Not the client's 404: the multipart upload was aborted
			// under us (expired by an instance's sweep).
			return fmt.Errorf("%s: the multipart upload is gone: %w", name, err)
		}
	}
	err = mapErr(name, err)
	if cond.IfMatch != "" && errors.Is(err, largo.ErrNotFound) {
		// If-Match on a key that does not exist. The cause is kept as
		// text: the error must not read as a missing folder.
		return fmt.Errorf("no object to match (%v): %w", err, largo.ErrPrecondition)
	}
	return err
}

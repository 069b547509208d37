package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"largo"
	"largo/transfer"
)

// ResumablePrefix is where Config.Resumable is mounted.
const ResumablePrefix = Prefix + "uploads/"

// writeMethods are the methods the file tree answers with writes on.
const writeMethods = readMethods + ", PUT, POST, DELETE"

// Errors of the write path, each a row of the status table.
var (
	errUnauthorized    = errors.New("no valid token")
	errReservedWrite   = errors.New("hidden or reserved name")
	errMissingFolder   = errors.New("folder does not exist")
	errParentNotDir    = errors.New("parent is not a folder")
	errBodyTimeout     = errors.New("request body stalled")
	errBodyIncomplete  = errors.New("request body incomplete")
	errBadCondition    = errors.New("unsupported condition")
	errCondUnsupported = errors.New("conditional writes not supported by the store")
	errBadForm         = errors.New("bad multipart form")
	errNotForm         = errors.New("not a multipart/form-data body")
	errPartialPut      = errors.New("PUT with Content-Range")
)

// allow is the Allow header of the file tree.
func (h *Handler) allow() string {
	if h.cfg.Upload {
		return writeMethods
	}
	return readMethods
}

// write checks a write in the order that lets a refused client keep its
// body: writes on, then the token, then the name. Nothing reads r.Body
// before these pass (Go sends 100 Continue on the first read).
func (h *Handler) write(w http.ResponseWriter, r *http.Request, name string) error {
	if !h.cfg.Upload {
		return &methodError{allow: readMethods}
	}
	if err := h.authorize(r); err != nil {
		return err
	}
	if err := WriteName(name); err != nil {
		return err
	}
	switch r.Method {
	case http.MethodPut:
		return h.put(w, r, name)
	case http.MethodPost:
		return h.postForm(w, r, name)
	}
	return h.remove(w, r, name)
}

// authorize returns errUnauthorized unless the request may write.
func (h *Handler) authorize(r *http.Request) error {
	if h.cfg.Auth == nil || h.cfg.Auth.Allow(r) {
		return nil
	}
	return errUnauthorized
}

// WriteName applies the write path policy to a name that passed
// largo.ParseName: hidden names and names under the reserved prefix are
// never written (an error wrapping ErrPermission). Resumable uploads apply
// it to their target names too. A new name must also be UTF-8, so that it
// reads back the same in listings, JSON and archives (an error wrapping
// ErrInvalidName).
func WriteName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("%q: %w: not UTF-8", name, largo.ErrInvalidName)
	}
	if reserved(name) {
		return fmt.Errorf("%s: %w: %w", name, errReservedWrite, largo.ErrPermission)
	}
	return nil
}

// resumable puts the write checks in front of the resumable upload
// handler. Only CORS preflights pass without a token: they carry none.
func (h *Handler) resumable(next http.Handler) http.Handler {
	return h.adapt(func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
			if err := h.authorize(r); err != nil {
				return err
			}
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// writeSetup returns the store's Creator and the request's condition, the
// first needs of every upload.
func (h *Handler) writeSetup(r *http.Request) (largo.Creator, largo.Condition, error) {
	cr, ok := h.cfg.Store.(largo.Creator)
	if !ok {
		return nil, largo.Condition{}, fmt.Errorf("write: %w", largo.ErrUnsupported)
	}
	cond, err := condition(r)
	return cr, cond, err
}

// condition reads If-None-Match and If-Match. Only the forms a write can
// apply atomically are accepted: If-None-Match: * and a single ETag (or *)
// in If-Match.
func condition(r *http.Request) (largo.Condition, error) {
	var c largo.Condition
	if v := strings.TrimSpace(r.Header.Get("If-None-Match")); v != "" {
		if v != "*" {
			return c, fmt.Errorf("If-None-Match %q: %w: only * is supported on writes", v, errBadCondition)
		}
		c.IfNoneMatch = true
	}
	if v := strings.TrimSpace(r.Header.Get("If-Match")); v != "" {
		if v != "*" && (strings.Contains(v, ",") || !strings.HasPrefix(v, `"`) || !strings.HasSuffix(v, `"`) || len(v) < 2) {
			return c, fmt.Errorf("If-Match %q: %w: one strong ETag or * is supported", v, errBadCondition)
		}
		c.IfMatch = v
	}
	return c, nil
}

// precheck evaluates a condition before the body is read, so that a
// client bound to fail never sends it. The commit checks it again,
// atomically.
func (h *Handler) precheck(ctx context.Context, name string, c largo.Condition) error {
	if c == (largo.Condition{}) {
		return nil
	}
	in, err := h.cfg.Store.Stat(ctx, name)
	if err != nil && !errors.Is(err, largo.ErrNotFound) {
		return err
	}
	return c.Check(name, in, err == nil)
}

// room checks an announced size (-1: unknown) against the size limit and
// the free space, and returns how many bytes the write may store.
func (h *Handler) room(ctx context.Context, name string, size int64) (int64, error) {
	if h.cfg.MaxUpload > 0 && size > h.cfg.MaxUpload {
		return 0, fmt.Errorf("%d bytes, limit %d: %w", size, h.cfg.MaxUpload, largo.ErrTooLarge)
	}
	sr, ok := h.cfg.Store.(largo.SpaceReporter)
	if !ok {
		return math.MaxInt64, nil
	}
	free, err := sr.Free(ctx, name)
	if errors.Is(err, largo.ErrUnsupported) {
		return math.MaxInt64, nil
	}
	if err != nil {
		return 0, err
	}
	avail := max(free-h.cfg.Reserve, 0)
	if size > avail {
		return 0, fmt.Errorf("%d bytes, %d free above the reserve: %w", size, avail, largo.ErrNoSpace)
	}
	return avail, nil
}

// createErr turns the errors of Create and Commit that mean a missing or
// wrong folder into the statuses a writer expects (409), instead of the
// 404 they mean on reads, and names a condition the store cannot apply.
func createErr(err error, cond largo.Condition) error {
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return fmt.Errorf("%w: %w", errMissingFolder, err)
	case errors.Is(err, largo.ErrNotDir):
		return fmt.Errorf("%w: %w", errParentNotDir, err)
	}
	return condErr(err, cond)
}

// condErr names, in an ErrUnsupported met under a condition, the
// condition as what the store cannot do: an object store whose server
// ignores conditional writes.
func condErr(err error, cond largo.Condition) error {
	if cond != (largo.Condition{}) && errors.Is(err, largo.ErrUnsupported) {
		return fmt.Errorf("%w: %w", errCondUnsupported, err)
	}
	return err
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// receive copies body into u through a pooled buffer, and returns the
// bytes stored. space bounds what may be stored (the free space above the
// reserve). Errors say which side failed: the client's (errBodyTimeout,
// errBodyIncomplete, *http.MaxBytesError) or the store's.
func (h *Handler) receive(u largo.Upload, body io.Reader, space int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var total int64
	defer func() { h.up.PendingBytes(-total) }()
	for {
		n, rerr := fill(body, buf)
		if n > 0 {
			if total+int64(n) > space {
				return total, fmt.Errorf("more than the %d bytes free above the reserve: %w", space, largo.ErrNoSpace)
			}
			m, werr := u.Write(buf[:n])
			total += int64(m)
			h.up.PendingBytes(int64(m))
			if werr != nil {
				return total, werr
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, bodyErr(rerr)
		}
	}
}

// fill reads into buf until it is full or r fails, and returns r's own
// error: whole buffers make one write system call per 256 KiB however the
// network cut the bytes. (io.ReadFull would not do: it turns an early
// io.EOF into io.ErrUnexpectedEOF, the very error of a body cut short.)
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

// bodyErr classifies an error met reading a request body.
func bodyErr(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case transfer.Classify(err) == transfer.Timeout:
		return fmt.Errorf("%w: %w", errBodyTimeout, err)
	}
	return fmt.Errorf("%w: %w", errBodyIncomplete, err)
}

// hasBody reports whether r may carry a body that a handler will read.
func hasBody(r *http.Request) bool {
	switch r.Method {
	case http.MethodPut, http.MethodPost, http.MethodPatch:
		return r.Body != nil && r.Body != http.NoBody
	}
	return false
}

// writeOutcome is how a request with a body ended: how reading it ended
// if that went wrong, else by its status.
func writeOutcome(tw *transfer.Response, body *transfer.Body) transfer.Outcome {
	if o := body.Outcome(); o != transfer.Complete {
		return o
	}
	if o := tw.Outcome(http.MethodPut); o != transfer.Complete {
		return o
	}
	switch code := tw.Status(); {
	case code >= 500:
		if code == http.StatusInsufficientStorage {
			return transfer.Rejected
		}
		return transfer.Error
	case code >= 400:
		return transfer.Rejected
	}
	return transfer.Complete
}

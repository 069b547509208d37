package s3api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"largo"
	"largo/ingest"
	"largo/transfer"
)

// protocol names S3 writes to the pre-upload hook and in notifications.
const protocol = "s3"

// get answers GetObject and HeadObject: the file through the gate, sent
// by http.ServeContent on the store's file (sendfile on a folder), its
// conditions S3's, its metadata the record's, a response-* parameter
// overriding a header.
func (h *Handler) get(w http.ResponseWriter, r *http.Request, key string) error {
	n, dir, err := name(key)
	if err != nil {
		return err
	}
	if dir {
		return errNoSuchKey // a folder is no object
	}
	ctx := r.Context()
	f, err := h.cfg.Store.Open(ctx, n)
	if errors.Is(err, largo.ErrIsDir) {
		return errNoSuchKey
	}
	if err != nil {
		return err
	}
	defer f.Close()
	in := f.Info()
	hdr := w.Header()
	if in.ETag != "" {
		hdr.Set("ETag", in.ETag)
	}
	if !in.ModTime.IsZero() {
		hdr.Set("Last-Modified", in.ModTime.UTC().Format(http.TimeFormat))
	}
	if err := checkConditions(r.Header, in, false); err != nil {
		return err
	}
	setMeta(hdr, n, in, h.metaFor(ctx, n, in))
	overrides(hdr, r.URL.Query())
	rg := r.Header.Get("Range")
	if strings.Contains(rg, ",") {
		// S3 sends one range at most; of several, the whole.
		r.Header.Del("Range")
		rg = ""
	}
	if rg != "" && !satisfiable(rg, in.Size) {
		hdr.Set("Content-Range", fmt.Sprintf("bytes */%d", in.Size))
		return errRange
	}
	if sum, _ := h.cfg.Digests.Lookup(ctx, n, in.ETag); len(sum) > 0 {
		b64 := base64.StdEncoding.EncodeToString(sum)
		hdr.Set("Repr-Digest", "sha-256=:"+b64+":")
		if rg == "" && strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
			hdr.Set(checksumHeader("sha256"), b64)
			hdr.Set("X-Amz-Checksum-Type", "FULL_OBJECT")
		}
	}
	// The conditions are answered; ServeContent keeps Range and If-Range.
	for _, k := range []string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		r.Header.Del(k)
	}
	if of, ok := f.(largo.OSFile); ok {
		http.ServeContent(w, r, "", in.ModTime, of.OSFile())
		return nil
	}
	body := &transfer.ReadErr{ReadSeeker: f}
	http.ServeContent(w, r, "", in.ModTime, body)
	return body.Err
}

// satisfiable reports whether a Range of bytes has a part within a file
// of size bytes (S3 answers InvalidRange otherwise); a Range it cannot
// read is ignored, as HTTP says.
func satisfiable(rg string, size int64) bool {
	spec, ok := strings.CutPrefix(rg, "bytes=")
	if !ok {
		return true
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return true
	}
	if first == "" {
		n, err := strconv.ParseInt(last, 10, 64)
		return err != nil || n > 0 && size > 0
	}
	start, err := strconv.ParseInt(first, 10, 64)
	return err != nil || start < size
}

// overrides sets the headers the response-* parameters of a GetObject
// name.
func overrides(hdr http.Header, q url.Values) {
	for _, k := range []string{"Content-Type", "Content-Language", "Expires", "Cache-Control", "Content-Disposition", "Content-Encoding"} {
		if v := q.Get("response-" + strings.ToLower(k)); v != "" {
			hdr.Set(k, v)
		}
	}
}

// checkConditions answers the conditions of a read of the version in
// (GetObject, HeadObject; with copy, those of a copy's source): 412 for
// If-Match or If-Unmodified-Since, 304 for If-None-Match or
// If-Modified-Since (412 for a copy's), in HTTP's order.
func checkConditions(h http.Header, in largo.Info, copy bool) error {
	prefix := ""
	if copy {
		prefix = "X-Amz-Copy-Source-"
	}
	notModified := error(errNotModified)
	if copy {
		notModified = refuse(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
	}
	failed := refuse(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
	mod := in.ModTime.Truncate(time.Second)
	if v := h.Get(prefix + "If-Match"); v != "" {
		if !etagListed(v, in.ETag) {
			return failed
		}
	} else if t, err := http.ParseTime(h.Get(prefix + "If-Unmodified-Since")); err == nil && mod.After(t) {
		return failed
	}
	if v := h.Get(prefix + "If-None-Match"); v != "" {
		if etagListed(v, in.ETag) {
			return notModified
		}
	} else if t, err := http.ParseTime(h.Get(prefix + "If-Modified-Since")); err == nil && !mod.After(t) {
		return notModified
	}
	return nil
}

// etagListed reports whether the list of ETags v (or *) names etag.
func etagListed(v, etag string) bool {
	for e := range strings.SplitSeq(v, ",") {
		e = strings.TrimSpace(e)
		if e == "*" || etag != "" && strings.Trim(strings.TrimPrefix(e, "W/"), `"`) == strings.Trim(etag, `"`) {
			return true
		}
	}
	return false
}

// condOf reads the condition of a write: If-None-Match: * (only
// creates) and If-Match (only replaces that version).
func condOf(h http.Header) (largo.Condition, error) {
	var c largo.Condition
	if v := h.Get("If-None-Match"); v != "" {
		if strings.TrimSpace(v) != "*" {
			return c, notImplemented("If-None-Match other than * on a write")
		}
		c.IfNoneMatch = true
	}
	if v := strings.TrimSpace(h.Get("If-Match")); v != "" {
		if v != "*" && !strings.HasPrefix(v, `"`) {
			v = `"` + v + `"`
		}
		c.IfMatch = v
	}
	return c, nil
}

// condFailed returns err, a write's refusal under cond, as S3 answers it:
// If-Match on a key that is not there is NoSuchKey, not a failed
// precondition.
func (h *Handler) condFailed(ctx context.Context, n string, cond largo.Condition, err error) error {
	if cond.IfMatch == "" || !errors.Is(err, largo.ErrPrecondition) {
		return err
	}
	if _, serr := h.cfg.Store.Stat(ctx, n); errors.Is(serr, largo.ErrNotFound) {
		return fmt.Errorf("%s: %w", n, largo.ErrNotFound)
	}
	return err
}

// put answers PutObject: the body through the write pipeline, admitted
// before a byte of it is read, checked against every digest the request
// states before it is committed.
func (h *Handler) put(w http.ResponseWriter, r *http.Request, key string) error {
	wr, n, dir, err := h.writeKey(key)
	if err != nil {
		return err
	}
	if dir {
		return h.putFolder(w, r, n)
	}
	meta, err := metaOf(r.Header)
	if err != nil {
		return err
	}
	cond, err := condOf(r.Header)
	if err != nil {
		return err
	}
	body, err := bodyOf(r, true, false)
	if err != nil {
		return err
	}
	ctx := r.Context()
	wt, err := wr.Begin(ctx, ingest.Target{Name: n, Size: body.size, Cond: cond, Protocol: protocol, Metadata: userMeta(meta), Meta: meta})
	if err != nil {
		return h.condFailed(ctx, n, cond, err)
	}
	got, err := wt.ReadFrom(body)
	switch {
	case err != nil:
	case body.size >= 0 && got != body.size:
		err = fmt.Errorf("%d bytes of %d: %w", got, body.size, largo.ErrBodyIncomplete)
	case body.SHA256Mismatch(wt.SHA256()):
		err = errContentSHA
	}
	if err != nil {
		wt.Abort()
		return err
	}
	res, err := wt.Commit(context.WithoutCancel(ctx))
	if err != nil {
		return h.condFailed(context.WithoutCancel(ctx), n, cond, err)
	}
	w.Header().Set("ETag", res.Info.ETag)
	body.Answer(w.Header())
	w.WriteHeader(http.StatusOK)
	return nil
}

// userMeta returns the user metadata of meta, as the pre-upload hook is
// told it: without the x-amz-meta- prefix.
func userMeta(meta map[string]string) map[string]string {
	var m map[string]string
	for k, v := range meta {
		if u, ok := strings.CutPrefix(k, "x-amz-meta-"); ok {
			if m == nil {
				m = map[string]string{}
			}
			m[u] = v
		}
	}
	return m
}

// putFolder answers a PutObject of a key that ends with a slash (a
// folder's marker, as consoles and some tools make): the folder is made,
// with the folders above it. Such a key holds no bytes.
func (h *Handler) putFolder(w http.ResponseWriter, r *http.Request, n string) error {
	wr, err := h.write()
	if err != nil {
		return err
	}
	body, err := bodyOf(r, false, false)
	if err != nil {
		return err
	}
	if body.size != 0 {
		return refuse(http.StatusBadRequest, "InvalidArgument", "A key that ends with a slash is a folder: it holds no bytes.")
	}
	ctx := r.Context()
	if err := ingest.CheckName(n); err != nil {
		return err
	}
	if err := wr.CheckLock(ctx, n, false, nil); err != nil {
		return err
	}
	if err := wr.CheckFolder(ctx, n); err != nil {
		return err
	}
	if err := wr.MakeDirs(ctx, n); err != nil {
		return err
	}
	wr.FolderMade(ctx, n)
	w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`) // the MD5 of nothing
	w.WriteHeader(http.StatusOK)
	return nil
}

// deleteObject answers DeleteObject: a removal through the pipeline. A
// key that is not there is no error, as in S3; a folder's key (ending
// with a slash) removes the folder when it is empty.
func (h *Handler) deleteObject(w http.ResponseWriter, r *http.Request, key string) error {
	n, dir, err := name(key)
	if err != nil {
		return err
	}
	cond, err := condOf(r.Header)
	if err != nil {
		return err
	}
	if err := h.remove(r.Context(), n, dir, cond); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// remove removes the file n (with dir, the empty folder n) under cond.
func (h *Handler) remove(ctx context.Context, n string, dir bool, cond largo.Condition) error {
	wr, err := h.write()
	if err != nil {
		return err
	}
	rm, err := wr.CheckRemove(ctx, n, cond, nil)
	if err != nil {
		return err
	}
	in, err := h.cfg.Store.Stat(ctx, n)
	switch {
	case errors.Is(err, largo.ErrNotFound) || errors.Is(err, largo.ErrNotDir) || err == nil && in.IsDir != dir:
		if cond.IfMatch != "" {
			return fmt.Errorf("%s: %w", n, largo.ErrPrecondition)
		}
		return nil // nothing of that kind there
	case err != nil:
		return err
	}
	err = rm.Remove(ctx, n, largo.RemoveOptions{Condition: cond})
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return nil
	case dir && errors.Is(err, largo.ErrNotEmpty):
		return nil // a folder's marker goes; its files stay
	case err != nil:
		return err
	}
	wr.Removed(ctx, n, in)
	return nil
}

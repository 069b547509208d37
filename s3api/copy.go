package s3api

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"largo"
	"largo/ingest"
)

// copySource reads x-amz-copy-source: /bucket/key or bucket/key,
// URL-encoded, of this bucket, without a version. It returns the
// source's name.
func (h *Handler) copySource(r *http.Request) (string, error) {
	v := r.Header.Get("X-Amz-Copy-Source")
	src, q, _ := strings.Cut(v, "?")
	if q != "" {
		if vq, err := url.ParseQuery(q); err != nil || len(vq) != 1 || vq.Get("versionId") != "null" {
			return "", errCopySource
		}
	}
	src, err := url.PathUnescape(src)
	if err != nil {
		return "", errCopySource
	}
	bucket, key, ok := strings.Cut(strings.TrimPrefix(src, "/"), "/")
	switch {
	case !ok || key == "":
		return "", errCopySource
	case bucket != h.cfg.Bucket:
		return "", errNoSuchBucket
	}
	n, dir, err := name(key)
	if err != nil {
		return "", err
	}
	if dir {
		return "", errNoSuchKey
	}
	return n, nil
}

// source looks at the source of a copy, and answers the conditions the
// request puts on it.
func (h *Handler) source(ctx context.Context, r *http.Request) (string, largo.Info, error) {
	src, err := h.copySource(r)
	if err != nil {
		return "", largo.Info{}, err
	}
	in, err := h.cfg.Store.Stat(ctx, src)
	if err == nil && in.IsDir {
		err = errNoSuchKey
	}
	if err != nil {
		return "", in, err
	}
	return src, in, checkConditions(r.Header, in, true)
}

// copyObject answers CopyObject: a copy made by the store (largo.Copier:
// copy_file_range on a folder, a server-side copy on a bucket), admitted
// by the write pipeline as a write of the source's size; where the store
// cannot, the source's bytes stream through the pipeline. The metadata
// is the source's (COPY) or the request's (REPLACE).
func (h *Handler) copyObject(w http.ResponseWriter, r *http.Request, key string) error {
	wr, dst, dir, err := h.writeKey(key)
	if err != nil {
		return err
	}
	if dir {
		return errInvalidKey
	}
	ctx := r.Context()
	src, in, err := h.source(ctx, r)
	if err != nil {
		return err
	}
	var meta map[string]string
	switch strings.ToUpper(r.Header.Get("X-Amz-Metadata-Directive")) {
	case "", "COPY":
		if src == dst {
			return errCopySelf
		}
		meta = h.metaFor(ctx, src, in)
	case "REPLACE":
		if meta, err = metaOf(r.Header); err != nil {
			return err
		}
	default:
		return errDirective
	}
	cond, err := condOf(r.Header)
	if err != nil {
		return err
	}
	t := ingest.Target{Name: dst, Size: in.Size, Cond: cond, Protocol: protocol, Metadata: userMeta(meta), Meta: meta}
	wt, err := wr.BeginCopy(ctx, t, src)
	if errors.Is(err, largo.ErrUnsupported) {
		wt, err = h.copyThrough(ctx, wr, t, src)
	}
	if err != nil {
		return err
	}
	res, err := wt.Commit(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	return writeXML(w, http.StatusOK, copyObjectResult{Xmlns: xmlns, ETag: res.Info.ETag, LastModified: s3Time(res.Info.ModTime)})
}

// copyThrough copies src through the pipeline, for a store that copies
// nothing itself: a write whose bytes are the source's.
func (h *Handler) copyThrough(ctx context.Context, wr *ingest.Pipeline, t ingest.Target, src string) (*ingest.Write, error) {
	f, err := h.cfg.Store.Open(ctx, src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	wt, err := wr.Begin(ctx, t)
	if err != nil {
		return nil, err
	}
	if _, err := wt.ReadFrom(f); err != nil {
		wt.Abort()
		return nil, err
	}
	return wt, nil
}

// maxDeleteBody bounds a DeleteObjects document: a thousand keys of at
// most 1 KiB each, and their markup.
const maxDeleteBody = 2 << 20

// deleteObjects answers DeleteObjects: up to a thousand removals, each
// as DeleteObject's, each answered in the document (only the failures
// in quiet mode).
func (h *Handler) deleteObjects(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.write(); err != nil {
		return err
	}
	body, err := bodyOf(r, false, false)
	if err != nil {
		return err
	}
	if body.size > maxDeleteBody {
		return errMalformedXML
	}
	var req deleteRequest
	lr := &io.LimitedReader{R: body, N: maxDeleteBody + 1}
	if err := xml.NewDecoder(lr).Decode(&req); err != nil || lr.N == 0 {
		var e *Error
		if errors.As(err, &e) {
			return err // the body's own failure: a digest, a signature
		}
		return errMalformedXML
	}
	// What follows the document must be checked too (its digest).
	if _, err := io.Copy(io.Discard, lr); err != nil || lr.N == 0 {
		if err == nil {
			err = errMalformedXML
		}
		return err
	}
	if len(req.Objects) > maxKeys {
		return errTooManyKeys
	}
	ctx := r.Context()
	res := deleteResult{Xmlns: xmlns}
	for _, o := range req.Objects {
		err := errors.New("versions are not kept")
		if o.VersionID == "" || o.VersionID == "null" {
			var n string
			var dir bool
			if n, dir, err = name(o.Key); err == nil {
				err = h.remove(ctx, n, dir, largo.Condition{})
			}
		}
		if err != nil {
			e := toError(err)
			res.Errors = append(res.Errors, deleteError{Key: o.Key, Code: e.Code, Message: e.Message})
			continue
		}
		if !req.Quiet {
			res.Deleted = append(res.Deleted, deletedKey{Key: o.Key})
		}
	}
	return writeXML(w, http.StatusOK, res)
}

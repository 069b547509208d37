package s3api

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ingest"
	"largo/record"
)

// S3's limits of multipart uploads.
const (
	minPart      = 5 << 20  // every part but the last
	maxPart      = 5 << 30  // any part
	maxPartCount = 10000    // parts of one upload
	maxComplete  = 16 << 20 // a CompleteMultipartUpload document: 10000 parts and their markup
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// uploadsOf returns the multipart uploads, or the refusal of a server
// that keeps none.
func (h *Handler) uploadsOf() (*Uploads, *ingest.Pipeline, error) {
	wr, err := h.write()
	if err != nil {
		return nil, nil, err
	}
	if h.cfg.Uploads == nil {
		return nil, nil, notImplemented("Multipart upload on this store")
	}
	return h.cfg.Uploads, wr, nil
}

// principalOf is who r comes from, as records keep it.
func principalOf(r *http.Request) string {
	p, _ := gate.From(r.Context())
	return p.String()
}

// createUpload answers CreateMultipartUpload: the upload is admitted as
// the write of its file (the gate, the name, the pre-upload hook, asked
// once for the whole file), and recorded with its metadata.
func (h *Handler) createUpload(w http.ResponseWriter, r *http.Request, key string) error {
	u, _, err := h.uploadsOf()
	if err != nil {
		return err
	}
	wr, n, dir, err := h.writeKey(key)
	if err != nil {
		return err
	}
	if dir {
		return errInvalidKey
	}
	meta, err := metaOf(r.Header)
	if err != nil {
		return err
	}
	alg := strings.ToLower(r.Header.Get("X-Amz-Checksum-Algorithm"))
	if _, ok := checksumAlgs[alg]; alg != "" && !ok {
		return errBadChecksum
	}
	ctx := r.Context()
	t, err := wr.Accept(ctx, ingest.Target{Name: n, Size: -1, Protocol: protocol, Metadata: userMeta(meta)})
	if err != nil {
		return err
	}
	id := newID()
	up := upload{Name: n, Key: key, Owner: principalOf(r), Created: u.now(), Meta: meta, Hooked: t.Hooked, Checksum: alg}
	if err := u.staging.begin(ctx, id, &up); err != nil {
		return err
	}
	if err := u.uploads.Create(ctx, id, up); err != nil {
		u.staging.remove(context.WithoutCancel(ctx), id, &up)
		return err
	}
	if alg != "" {
		w.Header().Set("X-Amz-Checksum-Algorithm", strings.ToUpper(alg))
	}
	return writeXML(w, http.StatusOK, initiateMultipartUploadResult{Xmlns: xmlns, Bucket: h.cfg.Bucket, Key: key, UploadID: id})
}

// partTarget reads the upload and the part number of an UploadPart, and
// checks that ctx's principal owns the upload and may still write its
// file.
func (h *Handler) partTarget(r *http.Request, key string) (*Uploads, *ingest.Pipeline, string, upload, int, error) {
	u, wr, err := h.uploadsOf()
	if err != nil {
		return nil, nil, "", upload{}, 0, err
	}
	q := r.URL.Query()
	id := q.Get("uploadId")
	n, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || n < 1 || n > maxPartCount {
		return nil, nil, "", upload{}, 0, errPartNumber
	}
	up, err := u.get(r.Context(), id, principalOf(r))
	if err == nil && (up.Done != "" || up.Key != key) {
		err = errNoSuchUpload
	}
	if err != nil {
		return nil, nil, "", upload{}, 0, err
	}
	if err := h.cfg.Store.Gate().Check(r.Context(), auth.Write, up.Name, false); err != nil {
		return nil, nil, "", upload{}, 0, err
	}
	return u, wr, id, up, n, nil
}

// uploadPart answers UploadPart: the part streams into the staging,
// admitted as it arrives against the size limit, the free space and the
// quotas (ingest.Held), checked against what the request says it hashes
// to, and recorded only then, replacing a part of its number.
func (h *Handler) uploadPart(w http.ResponseWriter, r *http.Request, key string) error {
	u, wr, id, up, n, err := h.partTarget(r, key)
	if err != nil {
		return err
	}
	body, err := bodyOf(r, false, true)
	if err != nil {
		return err
	}
	switch {
	case body.size < 0:
		return errNeedLength
	case body.size > maxPart:
		return errPartTooLarge
	}
	p, err := h.storePart(r.Context(), u, wr, id, &up, n, body.size, body.checked)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", p.ETag)
	body.Answer(w.Header())
	w.Header().Set("Content-Length", "0") // the answer is whole once sent
	w.WriteHeader(http.StatusOK)
	answered(w)
	u.advance(context.WithoutCancel(r.Context()), id)
	return nil
}

// storePart stages part n of the upload id, size bytes of body, and
// records it: its ETag is body's MD5.
func (h *Handler) storePart(ctx context.Context, u *Uploads, wr *ingest.Pipeline, id string, up *upload, n int, size int64, body *checked) (part, error) {
	old, err := u.parts.Get(ctx, partKey(id, n))
	exists := err == nil
	if err != nil && !errors.Is(err, largo.ErrNotFound) {
		return part{}, err
	}
	held, staged, err := u.hold(ctx, wr, id, up.Name)
	if err != nil {
		return part{}, err
	}
	chunk, err := held.Chunk(ctx, staged, size, body)
	if err != nil {
		return part{}, err
	}
	defer chunk.End()
	slot := false
	if u.staging.slots() && !exists {
		if err := u.fixStride(ctx, id, up, n, size); err != nil {
			return part{}, err
		}
		if up.Stride > 0 && size <= up.Stride {
			var release func()
			if release, slot = u.takeSlot(id, n); slot {
				defer release()
			}
		}
	}
	p, err := u.staging.put(ctx, id, up, n, size, chunkReader{chunk}, slot)
	if cerr := chunk.Err(); cerr != nil {
		err = cerr
	}
	if err != nil {
		return part{}, err
	}
	p.ETag, p.Checksum, p.Time = body.ETag(), body.checked, u.now()
	if err := u.parts.Put(context.WithoutCancel(ctx), partKey(id, n), p); err != nil {
		u.staging.drop(ctx, id, p)
		return part{}, err
	}
	grown := p.Size
	if exists {
		grown -= old.Size
		if old.Side != p.Side {
			u.staging.drop(ctx, id, old)
		}
	}
	u.grew(id, grown)
	return p, nil
}

// chunkReader reads a chunk admitted by the pipeline, whose end says why
// it ended: a limit's refusal, or the failure of the body's checks, which
// ingest.Chunk keeps in Err behind an io.EOF.
type chunkReader struct{ c *ingest.Chunk }

func (r chunkReader) Read(p []byte) (int, error) {
	n, err := r.c.Read(p)
	if err == io.EOF {
		if cerr := r.c.Err(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

// fixStride fixes the stride of the upload id by part n of size bytes
// when none is: part 1, or any of S3's smallest part or more (a last
// part, shorter, would not do). up is the record as it is after.
func (u *Uploads) fixStride(ctx context.Context, id string, up *upload, n int, size int64) error {
	if up.Stride > 0 || size == 0 || n != 1 && size < minPart {
		return nil
	}
	v, err := u.uploads.Update(ctx, id, func(v *upload, exists bool) (record.Change, error) {
		if !exists || v.Done != "" {
			return record.Keep, errNoSuchUpload
		}
		if v.Stride > 0 {
			return record.Keep, nil
		}
		v.Stride = size
		return record.Write, nil
	})
	if err != nil {
		return err
	}
	*up = v
	return nil
}

// advance hashes the parts of the upload id that follow its hashed
// first parts in order, as far as they are in: read back from the page
// cache as they come, so that Complete has little left to hash. A
// failure only leaves more to Complete.
func (u *Uploads) advance(ctx context.Context, id string) {
	d, ok := u.staging.(*diskStaging)
	if !ok {
		return
	}
	unlock := u.locks.Lock(id)
	defer unlock()
	for {
		up, err := u.uploads.Get(ctx, id)
		if err != nil || up.Done != "" {
			return
		}
		done := 0
		if up.Hashed != nil {
			done = up.Hashed.N
		}
		// A part before sent again since is found by Complete, whose
		// parts' ETags then chain to another digest: it hashes them all.
		next, err := u.parts.Get(ctx, partKey(id, done+1))
		if err != nil {
			return // not in yet
		}
		rc, err := d.open(id, &up, next)
		if err != nil {
			return
		}
		ph, err := extend(up.Hashed, next, ctxReader{ctx, rc})
		rc.Close()
		if err != nil {
			return
		}
		_, err = u.uploads.Update(ctx, id, func(v *upload, exists bool) (record.Change, error) {
			if !exists || v.Done != "" || (v.Hashed == nil) != (up.Hashed == nil) || v.Hashed != nil && v.Hashed.N != done {
				return record.Keep, errNoSuchUpload
			}
			v.Hashed = ph
			return record.Write, nil
		})
		if err != nil {
			u.log.Debug("s3: hashing the parts of an upload", "upload", id, "err", err)
			return
		}
	}
}

// answered sends what is written of the answer now, so that the client
// has it while the handler goes on (hashing the parts in order).
func answered(w http.ResponseWriter) {
	http.NewResponseController(w).Flush()
}

// uploadPartCopy answers UploadPartCopy: the part is a range of a file
// (x-amz-copy-source-range, or the whole), read through the gate and
// staged as a part sent would be.
func (h *Handler) uploadPartCopy(w http.ResponseWriter, r *http.Request, key string) error {
	u, wr, id, up, n, err := h.partTarget(r, key)
	if err != nil {
		return err
	}
	ctx := r.Context()
	src, in, err := h.source(ctx, r)
	if err != nil {
		return err
	}
	first, size := int64(0), in.Size
	if v := r.Header.Get("X-Amz-Copy-Source-Range"); v != "" {
		spec, ok := strings.CutPrefix(v, "bytes=")
		a, b, ok2 := strings.Cut(spec, "-")
		fa, err1 := strconv.ParseInt(a, 10, 64)
		lb, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || fa < 0 || lb < fa || lb >= in.Size {
			return errCopyRange
		}
		first, size = fa, lb-fa+1
	}
	if size > maxPart {
		return errPartTooLarge
	}
	f, err := h.cfg.Store.Open(ctx, src)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Info().ETag != in.ETag {
		return refuse(http.StatusPreconditionFailed, "PreconditionFailed", "The source changed while it was copied.")
	}
	if _, err := f.Seek(first, io.SeekStart); err != nil {
		return err
	}
	body := newChecked(io.LimitReader(f, size), expect{}, nil, false, true)
	p, err := h.storePart(ctx, u, wr, id, &up, n, size, body)
	if err != nil {
		return err
	}
	if err := writeXML(w, http.StatusOK, copyPartResult{Xmlns: xmlns, ETag: p.ETag, LastModified: s3Time(p.Time)}); err != nil {
		return err
	}
	answered(w)
	u.advance(context.WithoutCancel(ctx), id)
	return nil
}

// completeUpload answers CompleteMultipartUpload: the parts it lists, in
// ascending order, each with the ETag it was answered with, all but the
// last of at least 5 MiB, become the file, placed by the write pipeline
// under the request's condition (If-None-Match: *, If-Match) as any
// write: on a folder by a rename of the staged file, on a bucket by the
// completion of its multipart upload.
func (h *Handler) completeUpload(w http.ResponseWriter, r *http.Request, key string) error {
	u, wr, err := h.uploadsOf()
	if err != nil {
		return err
	}
	ctx := r.Context()
	id := r.URL.Query().Get("uploadId")
	if _, err := u.get(ctx, id, principalOf(r)); err != nil {
		return err
	}
	cond, err := condOf(r.Header)
	if err != nil {
		return err
	}
	listed, err := readComplete(r)
	if err != nil {
		return err
	}
	// One Complete of an upload at a time: one sent again while the
	// first is at work is answered as the first is.
	unlock := u.locks.Lock(id)
	defer unlock()
	up, err := u.get(ctx, id, principalOf(r))
	if err == nil && up.Key != key {
		err = errNoSuchUpload
	}
	if err != nil {
		return err
	}
	res := completeMultipartUploadResult{Xmlns: xmlns, Location: "/" + h.cfg.Bucket + "/" + (&url.URL{Path: key}).EscapedPath(), Bucket: h.cfg.Bucket, Key: key}
	if up.Done != "" {
		if up.DoneParts != listDigest(listed) {
			return errNoSuchUpload
		}
		res.ETag = up.Done // a Complete sent again: the answer of the first
		return writeXML(w, http.StatusOK, res)
	}
	parts, err := u.chosen(ctx, id, &up, listed)
	if err != nil {
		return err
	}
	ka := startKeepAlive(w, h.keepAlive)
	etag, err := h.place(context.WithoutCancel(ctx), u, wr, id, &up, parts, cond)
	err = h.condFailed(context.WithoutCancel(ctx), up.Name, cond, err)
	if err == nil {
		res.ETag = etag
		u.finish(context.WithoutCancel(ctx), id, &up, etag, listDigest(listed))
	}
	return ka.end(r, res, err, func(err error) {
		h.log.Warn("s3: a long CompleteMultipartUpload failed", "path", r.URL.Path, "err", err)
	})
}

// place makes parts, the parts of the upload id a Complete lists, the
// file, under cond, and returns its ETag. A write the pipeline refuses
// takes what was staged with it: the upload goes too.
func (h *Handler) place(ctx context.Context, u *Uploads, wr *ingest.Pipeline, id string, up *upload, parts []part, cond largo.Condition) (string, error) {
	staged, err := u.staging.assemble(ctx, id, up, parts)
	if err != nil {
		return "", err
	}
	u.release(id) // the file is admitted whole now
	t := ingest.Target{Name: up.Name, Cond: cond, Protocol: protocol, Hooked: up.Hooked, Meta: up.Meta, Metadata: userMeta(up.Meta)}
	out, err := wr.Place(ctx, t, staged)
	if err != nil {
		if ferr := u.forget(ctx, id, up); ferr != nil {
			h.log.Warn("s3: removing a refused multipart upload", "upload", id, "err", ferr)
		}
		return "", err
	}
	return out.Info.ETag, nil
}

// firstUploads returns the first n of ups, by key and then upload ID.
func firstUploads(ups []uploadInfo, n int) []uploadInfo {
	slices.SortFunc(ups, func(a, b uploadInfo) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.UploadID, b.UploadID)
	})
	return ups[:min(n, len(ups))]
}

// readComplete reads a CompleteMultipartUpload document: at least one
// part, at most 10000, in ascending order.
func readComplete(r *http.Request) ([]completedPart, error) {
	body, err := bodyOf(r, false, false)
	if err != nil {
		return nil, err
	}
	var doc completeMultipartUpload
	lr := &io.LimitedReader{R: body, N: maxComplete + 1}
	if err := xml.NewDecoder(lr).Decode(&doc); err != nil || lr.N == 0 {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, errMalformedXML
	}
	if _, err := io.Copy(io.Discard, lr); err != nil {
		return nil, err
	}
	if len(doc.Parts) == 0 || len(doc.Parts) > maxPartCount {
		return nil, errNoParts
	}
	for i, p := range doc.Parts {
		if p.PartNumber < 1 || p.PartNumber > maxPartCount {
			return nil, errPartNumber
		}
		if i > 0 && p.PartNumber <= doc.Parts[i-1].PartNumber {
			return nil, errPartOrder
		}
	}
	return doc.Parts, nil
}

// listDigest is the digest of a Complete's list, which a Complete sent
// again must repeat.
func listDigest(listed []completedPart) string {
	var ps []part
	for _, p := range listed {
		ps = append(ps, part{N: p.PartNumber, ETag: normalETag(p.ETag)})
	}
	return etagChain(ps)
}

// normalETag is an ETag with its quotes.
func normalETag(e string) string {
	return `"` + strings.Trim(strings.TrimSpace(e), `"`) + `"`
}

// chosen returns the records of the parts a Complete lists: each must
// be in, with the ETag listed; each but the last of S3's smallest part
// or more. On a bucket the list must name every part in.
func (u *Uploads) chosen(ctx context.Context, id string, up *upload, listed []completedPart) ([]part, error) {
	all, err := u.allParts(ctx, id)
	if err != nil {
		return nil, err
	}
	byN := make(map[int]part, len(all))
	for _, p := range all {
		byN[p.N] = p
	}
	parts := make([]part, 0, len(listed))
	for i, l := range listed {
		p, ok := byN[l.PartNumber]
		if !ok || p.ETag != normalETag(l.ETag) {
			return nil, errInvalidPart
		}
		if i < len(listed)-1 && p.Size < minPart {
			return nil, errTooSmall
		}
		parts = append(parts, p)
	}
	if !u.staging.slots() && len(parts) != len(all) {
		return nil, errAllParts
	}
	return parts, nil
}

// finish keeps of the upload id, completed, only the answer: its parts'
// records go, and what is left of its staging.
func (u *Uploads) finish(ctx context.Context, id string, up *upload, etag, listed string) {
	_, err := u.uploads.Update(ctx, id, func(v *upload, exists bool) (record.Change, error) {
		if !exists {
			return record.Keep, nil
		}
		v.Done, v.DoneParts, v.Hashed = etag, listed, nil
		return record.Write, nil
	})
	if err != nil {
		u.log.Warn("s3: recording a completed multipart upload", "upload", id, "err", err)
	}
	if up.Assembly == "" {
		u.staging.remove(ctx, id, up)
	}
	if err := u.dropParts(ctx, id); err != nil {
		u.log.Warn("s3: removing the parts of a completed multipart upload", "upload", id, "err", err)
	}
}

// abortUpload answers AbortMultipartUpload: the upload goes with its
// parts and their hold on the quotas.
func (h *Handler) abortUpload(w http.ResponseWriter, r *http.Request, key string) error {
	u, _, err := h.uploadsOf()
	if err != nil {
		return err
	}
	ctx := r.Context()
	id := r.URL.Query().Get("uploadId")
	up, err := u.get(ctx, id, principalOf(r))
	if err == nil && (up.Done != "" || up.Key != key) {
		err = errNoSuchUpload
	}
	if err != nil {
		return err
	}
	unlock := u.locks.Lock(id)
	defer unlock()
	if err := u.forget(context.WithoutCancel(ctx), id, &up); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listParts answers ListParts, a page of the upload's parts in order.
func (h *Handler) listParts(w http.ResponseWriter, r *http.Request, key string) error {
	u, _, err := h.uploadsOf()
	if err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	id := q.Get("uploadId")
	up, err := u.get(ctx, id, principalOf(r))
	if err == nil && (up.Done != "" || up.Key != key) {
		err = errNoSuchUpload
	}
	if err != nil {
		return err
	}
	max, err := count(q, "max-parts", 1000, 1000)
	if err != nil {
		return err
	}
	marker, err := count(q, "part-number-marker", 0, maxPartCount)
	if err != nil {
		return err
	}
	page, err := u.pageParts(ctx, id, marker, max+1)
	if err != nil {
		return err
	}
	p, _ := gate.From(ctx)
	res := listPartsResult{Xmlns: xmlns, Bucket: h.cfg.Bucket, Key: key, UploadID: id, PartNumberMarker: marker, MaxParts: max,
		Initiator: ownerOf(p), Owner: ownerOf(p), StorageClass: "STANDARD"}
	for i, e := range page {
		if i == max {
			res.IsTruncated = true
			break
		}
		res.Parts = append(res.Parts, partInfo{PartNumber: e.Value.N, LastModified: s3Time(e.Value.Time), ETag: e.Value.ETag, Size: e.Value.Size})
		res.NextPartNumberMarker = e.Value.N
	}
	return writeXML(w, http.StatusOK, res)
}

// listUploads answers ListMultipartUploads: the uploads in progress of
// the request's principal, by key and then upload ID.
func (h *Handler) listUploads(w http.ResponseWriter, r *http.Request) error {
	u, _, err := h.uploadsOf()
	if err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	if d := q.Get("delimiter"); d != "" && d != "/" {
		return errDelimiter
	}
	max, err := count(q, "max-uploads", 1000, 1000)
	if err != nil {
		return err
	}
	prefix, keyMarker, idMarker := q.Get("prefix"), q.Get("key-marker"), q.Get("upload-id-marker")
	owner := principalOf(r)
	p, _ := gate.From(ctx)
	var found []uploadInfo
	for e, err := range u.uploads.All(ctx) {
		if errors.Is(err, largo.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		up := e.Value
		if up.Owner != owner || up.Done != "" || !strings.HasPrefix(up.Key, prefix) ||
			up.Key < keyMarker || up.Key == keyMarker && (idMarker == "" || e.Key <= idMarker) {
			continue
		}
		found = append(found, uploadInfo{Key: up.Key, UploadID: e.Key, Initiator: ownerOf(p), Owner: ownerOf(p), StorageClass: "STANDARD", Initiated: s3Time(up.Created)})
		if len(found) > 4*(max+1)+1000 {
			found = firstUploads(found, max+1) // memory bounded by the page
		}
	}
	found = firstUploads(found, max+1)
	res := listMultipartUploadsResult{Xmlns: xmlns, Bucket: h.cfg.Bucket, KeyMarker: keyMarker, UploadIDMarker: idMarker, Prefix: prefix, MaxUploads: max}
	if len(found) > max {
		found, res.IsTruncated = found[:max], true
		if max > 0 {
			res.NextKeyMarker, res.NextUploadIDMarker = found[max-1].Key, found[max-1].UploadID
		}
	}
	res.Uploads = found
	return writeXML(w, http.StatusOK, res)
}

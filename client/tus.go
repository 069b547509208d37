package client

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// tusVersion is the tus protocol version spoken.
const tusVersion = "1.0.0"

// errGone marks a tus upload the server no longer has (expired, removed,
// or of another length than the file).
var errGone = errors.New("the server no longer has the upload")

// putTus uploads file with tus, resuming a remembered upload.
func (c *Client) putTus(ctx context.Context, file string, fi os.FileInfo, d *Destination, rel string, prog Progress) (Result, error) {
	res := Result{Path: file, Size: fi.Size()}
	if d.maxSize > 0 && fi.Size() > d.maxSize {
		return res, fmt.Errorf("%s is %d bytes; the server takes uploads of at most %d", file, fi.Size(), d.maxSize)
	}
	abs, folder, name, key, err := d.place(file, fi, rel)
	if err != nil {
		return res, err
	}
	up, err := c.loadUpload(key)
	if err != nil {
		return res, err
	}
	if up != nil && up.ConcatID != "" || up == nil && c.parallel(d, fi.Size()) {
		return c.putPieces(ctx, file, abs, fi, d, up, key, folder, name, prog)
	}
	f, err := os.Open(file)
	if err != nil {
		return res, localError{err}
	}
	defer f.Close()

	hctx, stopHash := context.WithCancel(ctx)
	defer stopHash()
	sum := hashAsync(hctx, file)
	var off int64 = -1 // unknown: ask the server
	var next *chunkSum // the checksum of the chunk after the one in flight
	created := false
	r := c.retrier()
	for {
		if up == nil {
			up = &upload{File: abs, Size: fi.Size(), ModTime: fi.ModTime(), Endpoint: d.Endpoint, Target: folder + "/" + name}
			if up.URL, err = c.tusCreate(ctx, d, up, folder, name); err != nil {
				return res, err
			}
			if err := c.saveUpload(key, up); err != nil {
				return res, err
			}
			off, created = 0, true
			prog.Begin(name, fi.Size(), 0)
		}
		var err error
		if off < 0 {
			off, err = c.tusOffset(ctx, up)
			if err == nil {
				prog.Begin(name, fi.Size(), off)
				if !created && off > 0 {
					res.Resumed = true
				}
			}
		}
		if err == nil && off == fi.Size() {
			break
		}
		if err == nil {
			var moved int64
			before := off
			off, moved, err = c.tusPatch(ctx, f, up, off, d.checksum, sum, &next, prog)
			res.Moved += moved
			if off > before {
				r.progressed()
			}
		}
		if errors.Is(err, errGone) && !created && ctx.Err() == nil {
			c.logf("%s: %v; starting a new upload", file, err)
			c.forgetUpload(key)
			up, res.Resumed = nil, false
			continue
		}
		if err == nil {
			continue
		}
		off = -1
		if err = r.again(ctx, err); err != nil {
			return res, err
		}
	}
	c.forgetUpload(key)
	if created && !res.Resumed && res.Moved == 0 && fi.Size() > 0 {
		res.UpToDate = true
	}
	switch {
	case sum.confirmed:
		res.Verified = sum.value
	case d.checksum != "":
		res.Verified = "tus " + d.checksum + " per chunk"
	}
	return res, nil
}

// tailSize is how many bytes of a file the last request of a tus upload
// carries at most, with the file's digest: the rest goes while the digest
// is being computed.
const tailSize = 4 << 20

// fileDigest is the sha-256 of a file being uploaded, computed on another
// goroutine while its bytes are sent, and given as Repr-Digest with the
// request that completes the upload: the server refuses the upload if what
// it stored differs (largo does; other tus servers ignore the field).
type fileDigest struct {
	done      chan struct{}
	value     string // the Repr-Digest field, once done
	err       error
	confirmed bool // the server answered the same digest
}

// hashAsync starts computing file's digest; cancel ctx to stop it.
func hashAsync(ctx context.Context, file string) *fileDigest {
	d := &fileDigest{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		sum, err := hashLocal(ctx, file, -1, noProgress{})
		d.value, d.err = digest{alg: "sha-256", sum: sum}.String(), err
	}()
	return d
}

// wait returns the digest field once it is computed.
func (d *fileDigest) wait(ctx context.Context) (string, error) {
	select {
	case <-d.done:
		return d.value, d.err
	case <-ctx.Done():
		return "", resumable(context.Cause(ctx))
	}
}

// place returns where an upload of file at rel goes (folder and name, as
// sent in the metadata) and the key of its state.
func (d *Destination) place(file string, fi os.FileInfo, rel string) (abs, folder, name, key string, err error) {
	if abs, err = filepath.Abs(file); err != nil {
		return "", "", "", "", localError{err}
	}
	folder, name = path.Split(rel)
	folder = path.Join(d.Folder, folder)
	if folder == "." {
		folder = ""
	}
	return abs, folder, name, uploadKey(abs, fi, d.Endpoint, folder+"/"+name), nil
}

// tusCreate creates the upload and returns its URL.
func (c *Client) tusCreate(ctx context.Context, d *Destination, up *upload, folder, name string) (string, error) {
	r := c.retrier()
	for {
		u, err := c.tusCreateOnce(ctx, d, up, folder, name)
		if err == nil {
			return u, nil
		}
		if err = r.again(ctx, err); err != nil {
			return "", err
		}
	}
}

func (c *Client) tusCreateOnce(ctx context.Context, d *Destination, up *upload, folder, name string) (string, error) {
	actx, wd := c.watch(ctx)
	defer wd.stop()
	req, err := c.newRequest(actx, http.MethodPost, d.Endpoint, http.NoBody)
	if err != nil {
		return "", err
	}
	req.Header.Set("Tus-Resumable", tusVersion)
	req.Header.Set("Upload-Length", strconv.FormatInt(up.Size, 10))
	req.Header.Set("Upload-Metadata", tusMetadata("filename", name, "folder", folder))
	resp, err := c.do(req)
	if err != nil {
		return "", cause(actx, err)
	}
	return createdAt(resp, "an upload")
}

// createdAt returns the URL of the upload a tus creation answered (its
// Location, resolved against the request's URL), or why there is none;
// what names the upload in the error.
func createdAt(resp *http.Response, what string) (string, error) {
	if resp.StatusCode != http.StatusCreated {
		return "", statusError(resp)
	}
	resp.Body.Close()
	loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return "", fmt.Errorf("the server created %s without a usable Location (%q)", what, resp.Header.Get("Location"))
	}
	return loc.String(), nil
}

// tusOffset asks the server how many bytes of the upload it has.
func (c *Client) tusOffset(ctx context.Context, up *upload) (int64, error) {
	actx, wd := c.watch(ctx)
	defer wd.stop()
	req, err := c.newRequest(actx, http.MethodHead, up.URL, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Tus-Resumable", tusVersion)
	resp, err := c.do(req)
	if err != nil {
		return 0, cause(actx, err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
	case http.StatusNotFound, http.StatusGone:
		return 0, errGone
	default:
		return 0, statusError(resp)
	}
	off, err := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	if err != nil || off < 0 || off > up.Size {
		return 0, transient("the server gave the upload offset %q", resp.Header.Get("Upload-Offset"))
	}
	if l := resp.Header.Get("Upload-Length"); l != "" && l != strconv.FormatInt(up.Size, 10) {
		return 0, fmt.Errorf("%w (its length is %s, the file's %d)", errGone, l, up.Size)
	}
	return off, nil
}

// tusPatch sends bytes from off on: the rest of the file in one request,
// or one chunk with its checksum when the server checks them. The last
// tailSize bytes go in a request of their own, with the file's digest. It
// returns the server's new offset and the bytes sent.
//
// With checksums, each chunk's is computed while the chunk before it is
// sent (pending holds it from one call to the next), not between the two
// requests, where the connection would wait for the hash.
func (c *Client) tusPatch(ctx context.Context, f *os.File, up *upload, off int64, alg string, fd *fileDigest, pending **chunkSum, prog Progress) (int64, int64, error) {
	n, last := chunkAt(off, up.Size, alg != "", c.chunkSize())
	var repr string
	if last {
		var err error
		if repr, err = fd.wait(ctx); err != nil {
			return off, 0, err
		}
	}
	var sum string
	if alg != "" {
		cs := *pending
		if cs == nil || cs.off != off || cs.n != n {
			cs = startChunkSum(f, alg, off, n) // a first chunk, or a retry
		}
		*pending = nil
		<-cs.done
		if cs.err != nil {
			return off, 0, localError{cs.err}
		}
		sum = cs.sum
		if after := off + n; after < up.Size {
			nn, _ := chunkAt(after, up.Size, true, c.chunkSize())
			*pending = startChunkSum(f, alg, after, nn)
		}
	}
	actx, wd := c.watch(ctx)
	defer wd.stop()
	body := &countReader{r: &touchReader{r: io.NewSectionReader(f, off, n), w: wd, prog: prog}}
	req, err := c.newRequest(actx, http.MethodPatch, up.URL, body)
	if err != nil {
		return off, 0, err
	}
	req.ContentLength = n
	req.Header.Set("Tus-Resumable", tusVersion)
	req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Expect", "100-continue")
	if sum != "" {
		req.Header.Set("Upload-Checksum", sum)
	}
	if repr != "" {
		req.Header.Set("Repr-Digest", repr)
	}
	resp, err := c.do(req)
	if err != nil {
		return off, body.sent(), cause(actx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
	case http.StatusNotFound, http.StatusGone:
		return off, body.sent(), errGone
	case http.StatusConflict:
		return off, body.sent(), transient("the server's offset is not %d", off)
	case 460: // checksum mismatch
		return off, body.sent(), transient("the server found a checksum mismatch in bytes %d-%d", off, off+n-1)
	case http.StatusLocked:
		return off, body.sent(), transient("the upload is locked by an earlier request")
	default:
		return off, body.sent(), statusError(resp)
	}
	next, err := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	if err != nil || next < off || next > up.Size {
		return off, body.sent(), transient("the server answered with the offset %q", resp.Header.Get("Upload-Offset"))
	}
	if got, ok := parseDigest(resp.Header.Get("Repr-Digest")); ok && repr != "" && next == up.Size {
		if got.String() != repr {
			return next, body.sent(), fmt.Errorf("%w: the server stored %s, the file is %s", ErrDigest, got, repr)
		}
		fd.confirmed = true
	}
	return next, body.sent(), nil
}

// chunkAt is the size of the PATCH that sends bytes from off on, of a file
// of size bytes: the rest of the file, or with checksums at most one chunk;
// the last tailSize bytes go alone (last), with the file's digest.
func chunkAt(off, size int64, checked bool, chunk int64) (n int64, last bool) {
	n = size - off
	if checked {
		n = min(n, chunk)
	}
	last = off+n == size
	if last && n > tailSize {
		n -= tailSize
		last = false
	}
	return n, last
}

// chunkSum is the tus checksum ("ALG BASE64") of n bytes of a file from
// off, computed on a goroutine of its own; done is closed when sum or err
// is set.
type chunkSum struct {
	off, n int64
	done   chan struct{}
	sum    string
	err    error
}

// startChunkSum starts computing the checksum of n bytes of f from off
// with alg (sha1 or sha256). It ends by itself: reading a closed file
// fails.
func startChunkSum(f *os.File, alg string, off, n int64) *chunkSum {
	cs := &chunkSum{off: off, n: n, done: make(chan struct{})}
	go func() {
		defer close(cs.done)
		var h hash.Hash = sha256.New()
		if alg == "sha1" {
			h = sha1.New()
		}
		if _, err := io.Copy(h, io.NewSectionReader(f, off, n)); err != nil {
			cs.err = err
			return
		}
		cs.sum = alg + " " + base64.StdEncoding.EncodeToString(h.Sum(nil))
	}()
	return cs
}

func (c *Client) chunkSize() int64 {
	if c.ChunkSize > 0 {
		return c.ChunkSize
	}
	return 64 << 20
}

// Cancel terminates the remembered resumable upload of file to d, if
// any, and forgets it. It reports whether there was one.
func (c *Client) Cancel(ctx context.Context, file string, d *Destination, rel string) (bool, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return false, localError{err}
	}
	abs, _, _, key, err := d.place(file, fi, d.rel(file, rel))
	if err != nil {
		return false, err
	}
	if d.IETF {
		key = uploadKey(abs, fi, "ietf", d.plainURL(d.rel(file, rel)))
	}
	up, err := c.loadUpload(key)
	if err != nil || up == nil {
		return false, err
	}
	req, err := c.newRequest(ctx, http.MethodDelete, up.URL, nil)
	if err != nil {
		return false, err
	}
	if d.IETF {
		req.Header.Set("Upload-Draft-Interop-Version", ietfVersion)
	} else {
		req.Header.Set("Tus-Resumable", tusVersion)
	}
	resp, err := c.do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusOK, http.StatusNotFound, http.StatusGone:
		c.forgetUpload(key)
		return true, nil
	}
	return false, statusError(resp)
}

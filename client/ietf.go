package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"largo/wire"
)

// Uploads in the IETF protocol (draft-ietf-httpbis-resumable-upload), as
// largo serves it at a file's own URL: the file is PUT to its URL, all but
// its last tailSize bytes, saying the upload is not complete; the server's
// 104 (Upload Resumption Supported) gives the upload resource, which is
// remembered at once in the same state file as a tus upload's. The rest
// goes in a PATCH that completes the upload, with the file's sha-256 as
// Repr-Digest. After an interruption the upload resource says how much it
// holds (HEAD) and the rest is appended from there.

// ietfVersion is the interop version of the draft spoken (draft -12).
const ietfVersion = "9"

// DiscoverIETF returns the destination of uploads to rawURL in the IETF
// protocol: a PUT to rawURL itself (with a file's name added to a URL that
// ends in a slash), which the server turns into a resumable upload. No
// request is made: a server without the protocol refuses the first upload.
func (c *Client) DiscoverIETF(rawURL string) (*Destination, error) {
	d, err := c.Discover(context.Background(), rawURL, true)
	if err != nil {
		return nil, err
	}
	d.Plain, d.IETF = false, true
	return d, nil
}

// ietfState is where an IETF upload stands.
type ietfState struct {
	offset   int64
	complete bool
}

// putIETF uploads file to its URL in the IETF protocol, resuming a
// remembered upload.
func (c *Client) putIETF(ctx context.Context, file string, fi os.FileInfo, d *Destination, rel string, prog Progress) (Result, error) {
	res := Result{Path: file, Size: fi.Size()}
	target := d.plainURL(rel)
	abs, err := filepath.Abs(file)
	if err != nil {
		return res, localError{err}
	}
	key := uploadKey(abs, fi, "ietf", target)
	up, err := c.loadUpload(key)
	if err != nil {
		return res, err
	}
	f, err := os.Open(file)
	if err != nil {
		return res, localError{err}
	}
	defer f.Close()
	hctx, stopHash := context.WithCancel(ctx)
	defer stopHash()
	sum := hashAsync(hctx, file)
	name := filepath.Base(file)
	st := ietfState{offset: -1} // unknown: ask the server
	created := false
	r := c.retrier()
	for !st.complete {
		var moved int64
		before := st.offset
		switch {
		case up == nil:
			up = &upload{File: abs, Size: fi.Size(), ModTime: fi.ModTime(), Endpoint: "ietf", Target: target}
			prog.Begin(name, fi.Size(), 0)
			st, moved, err = c.ietfCreate(ctx, f, up, key, sum, prog)
			created, before = true, 0
		case st.offset < 0:
			if st, err = c.ietfOffset(ctx, up); err == nil {
				prog.Begin(name, fi.Size(), st.offset)
				res.Resumed = res.Resumed || !created && st.offset > 0
			}
		default:
			st, moved, err = c.ietfAppend(ctx, f, up, st.offset, sum, prog)
		}
		res.Moved += moved
		if st.offset > before {
			r.progressed()
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, errGone) && !created && ctx.Err() == nil:
			c.logf("%s: %v; starting a new upload", file, err)
			c.forgetUpload(key)
			up, res.Resumed = nil, false
			continue
		case up != nil && up.URL == "":
			up = nil // no upload resource yet: create again
		}
		st.offset, st.complete = -1, false
		if err = r.again(ctx, err); err != nil {
			return res, err
		}
	}
	c.forgetUpload(key)
	if !created && res.Moved == 0 && fi.Size() > 0 {
		res.UpToDate = true
	}
	if sum.confirmed {
		res.Verified = sum.value
	}
	return res, nil
}

// ietfCreate starts the upload: a PUT of the file but its tail, or, for a
// small file, of all of it with its digest. The upload's URL is saved as
// soon as the 104 gives it.
func (c *Client) ietfCreate(ctx context.Context, f *os.File, up *upload, key string, fd *fileDigest, prog Progress) (ietfState, int64, error) {
	n, complete := up.Size-tailSize, false
	if n <= 0 {
		n, complete = up.Size, true
	}
	var repr string
	if complete {
		var err error
		if repr, err = fd.wait(ctx); err != nil {
			return ietfState{}, 0, err
		}
	}
	base, err := url.Parse(up.Target)
	if err != nil {
		return ietfState{}, 0, err
	}
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		// A 104 of another interop version is ignored, as the draft asks.
		if code != 104 || h.Get("Upload-Draft-Interop-Version") != ietfVersion || up.URL != "" {
			return nil
		}
		if loc, err := base.Parse(h.Get("Location")); err == nil && h.Get("Location") != "" {
			up.URL = loc.String()
			if err := c.saveUpload(key, up); err != nil {
				c.logf("%s: remembering the upload: %v", up.File, err)
			}
		}
		return nil
	}}
	actx, wd := c.watch(httptrace.WithClientTrace(ctx, trace))
	defer wd.stop()
	body := &countReader{r: &touchReader{r: io.NewSectionReader(f, 0, n), w: wd, prog: prog}}
	req, err := c.newRequest(actx, http.MethodPut, up.Target, body)
	if err != nil {
		return ietfState{}, 0, err
	}
	req.ContentLength = n
	if n == 0 {
		req.Body = http.NoBody
	}
	hdr := req.Header
	hdr.Set("Upload-Draft-Interop-Version", ietfVersion)
	hdr.Set("Upload-Complete", wire.FormatBoolItem(complete))
	hdr.Set("Upload-Length", strconv.FormatInt(up.Size, 10))
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("Expect", "100-continue")
	if repr != "" {
		hdr.Set("Repr-Digest", repr)
	}
	resp, err := c.do(req)
	if err != nil {
		return ietfState{}, body.sent(), cause(actx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return ietfState{}, body.sent(), statusError(resp)
	}
	if complete {
		st, err := ietfDone(resp, up, repr, fd)
		return st, body.sent(), err
	}
	if up.URL == "" { // no 104 came: the final answer names the upload
		loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
		if err != nil || resp.Header.Get("Location") == "" {
			return ietfState{}, body.sent(), fmt.Errorf("%s answered %d without an upload resource: it does not speak the IETF resumable-upload protocol (interop version %s)", up.Target, resp.StatusCode, ietfVersion)
		}
		up.URL = loc.String()
		if err := c.saveUpload(key, up); err != nil {
			return ietfState{}, body.sent(), err
		}
	}
	st, err := ietfOffsetField(resp, up)
	return st, body.sent(), err
}

// ietfOffset asks the upload resource where the upload stands.
func (c *Client) ietfOffset(ctx context.Context, up *upload) (ietfState, error) {
	actx, wd := c.watch(ctx)
	defer wd.stop()
	req, err := c.newRequest(actx, http.MethodHead, up.URL, nil)
	if err != nil {
		return ietfState{}, err
	}
	req.Header.Set("Upload-Draft-Interop-Version", ietfVersion)
	resp, err := c.do(req)
	if err != nil {
		return ietfState{}, cause(actx, err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
	case http.StatusNotFound, http.StatusGone:
		return ietfState{}, errGone
	default:
		return ietfState{}, statusError(resp)
	}
	if l := resp.Header.Get("Upload-Length"); l != "" && l != strconv.FormatInt(up.Size, 10) {
		return ietfState{}, fmt.Errorf("%w (its length is %s, the file's %d)", errGone, l, up.Size)
	}
	return ietfOffsetField(resp, up)
}

// ietfOffsetField reads the offset and completeness of an answer.
func ietfOffsetField(resp *http.Response, up *upload) (ietfState, error) {
	off, ok := wire.ParseIntegerItem(resp.Header.Get("Upload-Offset"))
	if !ok || off > up.Size {
		return ietfState{}, transient("the server gave the upload offset %q", resp.Header.Get("Upload-Offset"))
	}
	complete, _ := wire.ParseBoolItem(resp.Header.Get("Upload-Complete"))
	if complete && off != up.Size {
		return ietfState{}, fmt.Errorf("%w (complete at %d bytes, the file has %d)", errGone, off, up.Size)
	}
	return ietfState{offset: off, complete: complete}, nil
}

// ietfAppend sends the bytes from off on: the bulk, then the last tailSize
// bytes with the file's digest in the request that completes the upload.
func (c *Client) ietfAppend(ctx context.Context, f *os.File, up *upload, off int64, fd *fileDigest, prog Progress) (ietfState, int64, error) {
	n, complete := up.Size-off, true
	if n > tailSize {
		n, complete = n-tailSize, false
	}
	var repr string
	if complete {
		var err error
		if repr, err = fd.wait(ctx); err != nil {
			return ietfState{offset: off}, 0, err
		}
	}
	actx, wd := c.watch(ctx)
	defer wd.stop()
	body := &countReader{r: &touchReader{r: io.NewSectionReader(f, off, n), w: wd, prog: prog}}
	req, err := c.newRequest(actx, http.MethodPatch, up.URL, body)
	if err != nil {
		return ietfState{offset: off}, 0, err
	}
	req.ContentLength = n
	if n == 0 {
		req.Body = http.NoBody
	}
	hdr := req.Header
	hdr.Set("Upload-Draft-Interop-Version", ietfVersion)
	hdr.Set("Content-Type", "application/partial-upload")
	hdr.Set("Upload-Offset", strconv.FormatInt(off, 10))
	hdr.Set("Upload-Complete", wire.FormatBoolItem(complete))
	hdr.Set("Expect", "100-continue")
	if repr != "" {
		hdr.Set("Repr-Digest", repr)
	}
	resp, err := c.do(req)
	if err != nil {
		return ietfState{offset: off}, body.sent(), cause(actx, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusGone:
		return ietfState{offset: off}, body.sent(), errGone
	case resp.StatusCode == http.StatusConflict && resp.Header.Get("Upload-Complete") == "?0":
		return ietfState{offset: off}, body.sent(), transient("the server's offset is %s, not %d", resp.Header.Get("Upload-Offset"), off)
	case resp.StatusCode/100 != 2:
		return ietfState{offset: off}, body.sent(), statusError(resp)
	case complete:
		st, err := ietfDone(resp, up, repr, fd)
		return st, body.sent(), err
	}
	st, err := ietfOffsetField(resp, up)
	if err == nil && st.offset < off {
		err = transient("the server answered with the offset %d, before %d", st.offset, off)
	}
	return st, body.sent(), err
}

// ietfDone checks the answer to the request that completed the upload:
// the upload complete, and the digest the server computed the file's.
func ietfDone(resp *http.Response, up *upload, repr string, fd *fileDigest) (ietfState, error) {
	if complete, _ := wire.ParseBoolItem(resp.Header.Get("Upload-Complete")); !complete {
		return ietfState{}, transient("the server did not take the upload as complete (%d, Upload-Complete %q)", resp.StatusCode, resp.Header.Get("Upload-Complete"))
	}
	if got, ok := parseDigest(resp.Header.Get("Repr-Digest")); ok && got.alg == "sha-256" {
		if got.String() != repr {
			return ietfState{offset: up.Size, complete: true}, fmt.Errorf("%w: the server stored %s, the file is %s", ErrDigest, got, repr)
		}
		fd.confirmed = true
	}
	return ietfState{offset: up.Size, complete: true}, nil
}

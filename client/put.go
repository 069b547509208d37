package client

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// UploadsPath is where largo serves tus uploads, on the origin of the URL
// an upload names.
const UploadsPath = "/_largo/uploads/"

// SharePrefix begins the path of a largo share link; an upload to one (a
// drop box) speaks the IETF protocol at the link's own URL.
const SharePrefix = "/_largo/s/"

// Destination is where uploads go, found once by Discover.
type Destination struct {
	// URL is the URL the user gave.
	URL *url.URL
	// Plain is true for single PUTs to URL; false for resumable uploads.
	Plain bool
	// IETF is true for resumable uploads in the IETF protocol, at URL
	// itself (DiscoverIETF); false for tus uploads to Endpoint.
	IETF bool
	// Endpoint is the tus creation URL: URL itself when it is a tus
	// endpoint, else largo's UploadsPath on URL's origin.
	Endpoint string
	// Folder is the folder, relative to the server's root, that uploads go
	// into, sent as the "folder" metadata; empty for a plain tus endpoint.
	Folder string
	// Name, when set, is the name the (single) file gets, from a URL that
	// ends in a name rather than a slash.
	Name string
	// checksum is the tus checksum algorithm to use ("sha256", "sha1"), or
	// "" when the server checks none.
	checksum string
	// maxSize is the server's Tus-Max-Size; 0 means none given.
	maxSize int64
	// concat is whether the server offers tus concatenation, for
	// parallel uploads.
	concat bool
}

// Discover finds how to upload to rawURL. With plain set it is a PUT to
// rawURL (a name is added to a URL ending in a slash). Otherwise, when
// rawURL is itself a tus endpoint (OPTIONS answers with Tus-Version), files
// are created there, with their name as metadata; else rawURL names a
// folder or file on a largo server, whose tus endpoint is UploadsPath on
// the same origin. A largo share link (a drop box) is uploaded to in the
// IETF protocol at its own URL, where alone it may write.
func (c *Client) Discover(ctx context.Context, rawURL string, plain bool) (*Destination, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http or https URL", rawURL)
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	d := &Destination{URL: u, Plain: plain}
	if !strings.HasSuffix(u.Path, "/") {
		d.Name = path.Base(u.Path)
	}
	if plain {
		return d, nil
	}
	if strings.HasPrefix(u.Path, SharePrefix) {
		// A share link takes uploads at its own URL only: the tus
		// endpoint is closed to it, the IETF protocol is not.
		d.IETF = true
		return d, nil
	}
	r := c.retrier()
	for {
		err := c.discover(ctx, d)
		if err == nil {
			return d, nil
		}
		if err = r.again(ctx, err); err != nil {
			return nil, err
		}
	}
}

func (c *Client) discover(ctx context.Context, d *Destination) error {
	ok, err := c.tusOptions(ctx, d, d.URL.String())
	if err != nil || ok {
		d.Endpoint, d.Name = d.URL.String(), ""
		return err
	}
	ep := &url.URL{Scheme: d.URL.Scheme, Host: d.URL.Host, Path: UploadsPath}
	if ok, err = c.tusOptions(ctx, d, ep.String()); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s offers no resumable uploads (no tus endpoint at %s or %s): use --plain for a single PUT", d.URL.Host, d.URL.Redacted(), ep)
	}
	d.Endpoint = ep.String()
	d.Folder = strings.Trim(d.URL.Path, "/")
	if d.Name != "" {
		d.Folder = strings.Trim(path.Dir(d.URL.Path), "/")
	}
	return nil
}

// tusOptions asks u for its tus capabilities; ok is false when it is no
// tus endpoint.
func (c *Client) tusOptions(ctx context.Context, d *Destination, u string) (ok bool, err error) {
	actx, wd := c.watch(ctx)
	defer wd.stop()
	req, err := c.newRequest(actx, http.MethodOptions, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Tus-Resumable", tusVersion)
	resp, err := c.do(req)
	if err != nil {
		return false, cause(actx, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode >= 500 {
		return false, statusError(resp)
	}
	resp.Body.Close()
	if !strings.Contains(resp.Header.Get("Tus-Version"), tusVersion) {
		return false, nil
	}
	d.checksum = ""
	if hasToken(resp.Header.Get("Tus-Extension"), "checksum") {
		for _, alg := range []string{"sha256", "sha1"} {
			if hasToken(resp.Header.Get("Tus-Checksum-Algorithm"), alg) {
				d.checksum = alg
				break
			}
		}
	}
	fmt.Sscan(resp.Header.Get("Tus-Max-Size"), &d.maxSize)
	d.concat = hasToken(resp.Header.Get("Tus-Extension"), "concatenation")
	return true, nil
}

// hasToken reports whether the comma-separated list v holds tok.
func hasToken(v, tok string) bool {
	for t := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(strings.TrimSpace(t), tok) {
			return true
		}
	}
	return false
}

// Put uploads the local file to d: as one PUT, or resumably (tus, or the
// IETF protocol), resuming the upload an earlier run of the same file to
// the same place began. rel is
// the file's path below the folder d names ("" for the file's own name).
func (c *Client) Put(ctx context.Context, file string, d *Destination, rel string) (Result, error) {
	res := Result{Path: file}
	fi, err := os.Stat(file)
	if err != nil {
		return res, localError{err}
	}
	if !fi.Mode().IsRegular() {
		return res, localError{fmt.Errorf("%s is not a regular file", file)}
	}
	res.Size = fi.Size()
	rel = d.rel(file, rel)
	prog := c.progress()
	defer prog.End()
	switch {
	case d.Plain:
		res, err = c.putPlain(ctx, file, fi.Size(), d.plainURL(rel), prog)
	case d.IETF:
		res, err = c.putIETF(ctx, file, fi, d, rel, prog)
	default:
		res, err = c.putTus(ctx, file, fi, d, rel, prog)
	}
	return res, d.folderNamed(err)
}

// reasonIsDir is the reason largo gives a write to a folder's name.
const reasonIsDir = "is a folder"

// folderNamed says what to do when err refuses a write to the name the
// URL ends in because that name is a folder: end the URL with a slash,
// so that the file goes into it.
func (d *Destination) folderNamed(err error) error {
	var se *StatusError
	if d.Name == "" || !errors.As(err, &se) || se.Code != http.StatusConflict || se.Reason != reasonIsDir {
		return err
	}
	return fmt.Errorf("%w: %s names a folder: to upload into it, end the URL with a slash (%s/)", err, d.URL.Redacted(), d.URL.Redacted())
}

// rel is the slash-separated path an upload of file gets below the folder
// d names: rel itself when given, else the name in the URL or the file's.
func (d *Destination) rel(file, rel string) string {
	if rel == "" {
		rel = filepath.Base(file)
		if d.Name != "" {
			rel = d.Name
		}
	}
	return filepath.ToSlash(rel)
}

// plainURL is the URL a plain PUT of the file at rel goes to.
func (d *Destination) plainURL(rel string) string {
	if d.Name != "" {
		return d.URL.String()
	}
	u := *d.URL
	raw := strings.TrimSuffix(u.EscapedPath(), "/")
	for elem := range strings.SplitSeq(rel, "/") {
		raw += "/" + url.PathEscape(elem)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + rel
	u.RawPath = raw
	return u.String()
}

// hashLocal returns the sha-256 of file, reporting progress.
func hashLocal(ctx context.Context, file string, size int64, prog Progress) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, localError{err}
	}
	defer f.Close()
	prog.Begin(filepath.Base(file)+" (sha-256)", size, 0)
	h := sha256.New()
	buf := make([]byte, copyBuf)
	for {
		if err := ctx.Err(); err != nil {
			return nil, resumable(context.Cause(ctx))
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		prog.Add(int64(n))
		if err == io.EOF {
			return h.Sum(nil), nil
		}
		if err != nil {
			return nil, localError{err}
		}
	}
}

// putPlain sends the file in one PUT with its length and digest, again
// from the start after a failure.
func (c *Client) putPlain(ctx context.Context, file string, size int64, target string, prog Progress) (Result, error) {
	res := Result{Path: file, Size: size}
	sum, err := hashLocal(ctx, file, size, prog)
	if err != nil {
		return res, err
	}
	dg := digest{alg: "sha-256", sum: sum}.String()
	res.Verified = dg
	r := c.retrier()
	for {
		n, err := c.putOnce(ctx, file, size, target, dg, prog)
		res.Moved += n
		if err == nil {
			return res, nil
		}
		if n > 0 {
			r.progressed()
		}
		if err = r.again(ctx, err); err != nil {
			if errors.Is(err, ErrResumable) {
				// A PUT cannot go on from the middle: say so rather than promise a resume.
				err = fmt.Errorf("%w (a plain PUT starts again from the beginning)", err)
			}
			return res, err
		}
	}
}

func (c *Client) putOnce(ctx context.Context, file string, size int64, target, dg string, prog Progress) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, localError{err}
	}
	defer f.Close()
	actx, wd := c.watch(ctx)
	defer wd.stop()
	body := &countReader{r: &touchReader{r: f, w: wd, prog: prog}}
	req, err := c.newRequest(actx, http.MethodPut, target, body)
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Repr-Digest", dg)
	req.Header.Set("Content-Digest", dg)
	req.Header.Set("Expect", "100-continue")
	prog.Begin(filepath.Base(file), size, 0)
	resp, err := c.do(req)
	if err != nil {
		return body.sent(), cause(actx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusNoContent:
	default:
		return body.sent(), statusError(resp)
	}
	if got, ok := parseDigest(resp.Header.Get("Repr-Digest")); ok && got.alg == "sha-256" && got.String() != dg {
		return body.sent(), fmt.Errorf("%w: the server stored %s, the file is %s", ErrDigest, got, dg)
	}
	return body.sent(), nil
}

// countReader counts the bytes read through it. The count may be read
// while a request's body is still being sent: a server may answer before
// it has read the whole body, and the transport goes on sending.
type countReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// sent returns the bytes read so far.
func (c *countReader) sent() int64 { return c.n.Load() }

// tusMetadata encodes Upload-Metadata: each key with its value in base64.
func tusMetadata(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			parts = append(parts, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
		}
	}
	return strings.Join(parts, ",")
}

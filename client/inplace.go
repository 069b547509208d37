package client

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// What a folder upload (PutTree) skips: a file the server already holds
// whole. Each file is asked for with a HEAD at the URL it would land at:
// it is in place when the server's copy has the local file's size and,
// when the server gives a Repr-Digest (largo keeps one for every file it
// stored), the same digest; a server that gives none is believed on the
// size when its copy is not older than the local file. With
// Client.Checksum the digest is required: a file whose copy has none is
// sent again. A HEAD costs a round trip where a file takes several, and
// the local file is hashed only when the server has a digest to compare.

// fileURL is the URL the file at rel (below the folder d names) lands
// at, for a HEAD; ok is false when the server gives none: a tus endpoint
// of another server, whose uploads have no place of their own, or a
// drop box, which never reads.
func (d *Destination) fileURL(rel string) (string, bool) {
	switch {
	case d.Plain:
		return d.plainURL(rel), true
	case d.IETF:
		if strings.HasPrefix(d.URL.Path, SharePrefix) {
			return "", false
		}
		return d.plainURL(rel), true
	case d.Endpoint == "" || d.Endpoint == d.URL.String():
		return "", false
	}
	u := url.URL{Scheme: d.URL.Scheme, Host: d.URL.Host, Path: "/", RawPath: "/"}
	for elem := range strings.SplitSeq(strings.Trim(d.Folder+"/"+rel, "/"), "/") {
		if elem == "" {
			continue
		}
		u.Path += elem + "/"
		u.RawPath += url.PathEscape(elem) + "/"
	}
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.RawPath, "/")
	return u.String(), true
}

// remoteCopy is what a HEAD tells of the server's copy of a file.
type remoteCopy struct {
	size     int64
	modified time.Time // zero when not given
	digest   string    // the Repr-Digest, "" when none
}

// inPlace reports whether the server already holds the local file (of
// info fi) whole at the place rel of d. Any doubt is a no: the file is
// sent, and the server judges.
func (c *Client) inPlace(ctx context.Context, file string, fi os.FileInfo, d *Destination, rel string) (bool, error) {
	u, ok := d.fileURL(rel)
	if !ok {
		return false, nil
	}
	rc, found, err := c.head(ctx, u)
	if err != nil || !found || rc.size != fi.Size() {
		return false, err
	}
	if rc.digest == "" {
		if c.Checksum {
			return false, nil
		}
		return !rc.modified.IsZero() && !rc.modified.Before(fi.ModTime().Truncate(time.Second)), nil
	}
	h, err := hashFile(file, fi.Size(), rc.digest)
	if err != nil {
		return false, err
	}
	want, _ := parseDigest(rc.digest)
	return bytes.Equal(h.Sum(nil), want.sum), nil
}

// head asks for the file at u, retrying; found is false when the server
// has no such file, or will not say (a folder, a name it may not read).
func (c *Client) head(ctx context.Context, u string) (rc remoteCopy, found bool, err error) {
	r := c.retrier()
	for {
		rc, found, err = c.headOnce(ctx, u)
		if err == nil {
			return rc, found, nil
		}
		if err = r.again(ctx, err); err != nil {
			return rc, false, err
		}
	}
}

func (c *Client) headOnce(ctx context.Context, u string) (remoteCopy, bool, error) {
	actx, wd := c.watch(ctx)
	defer wd.stop()
	req, err := c.newRequest(actx, http.MethodHead, u, nil)
	if err != nil {
		return remoteCopy{}, false, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("Want-Repr-Digest", "sha-256=10, sha-512=3")
	resp, err := c.do(req)
	if err != nil {
		return remoteCopy{}, false, cause(actx, err)
	}
	resp.Body.Close()
	if resp.Request.URL.String() != req.URL.String() {
		return remoteCopy{}, false, nil // redirected: a folder, or another place
	}
	if resp.StatusCode != http.StatusOK {
		if se := statusError(resp); retryable(se) {
			return remoteCopy{}, false, se
		}
		return remoteCopy{}, false, nil
	}
	rc := remoteCopy{size: resp.ContentLength, digest: digestHeader(resp)}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		rc.modified = t
	}
	return rc, rc.size >= 0, nil
}

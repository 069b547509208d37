//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
	"largo/internal/testenv"
)

// Every byte admitted, against the real binary on a folder and a bucket:
// the chunks of a resumable upload whose length is not known are held to
// --max-upload, the reserve and the quotas as they arrive, and refused
// before they are staged; an upload refused at its end leaves nothing in
// the state area; placed partials are checked against the file they
// declare; a move is admitted against the quotas below its destination.

const admissionAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "1000"
quota_files = 2

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["alice", "bob"]
allow = ["all"]

[[quota]]
path = "/pub/z/deep"
bytes = "2000"
`

// stagingPrefix is where the resumable uploads are staged, in the state
// area.
const stagingPrefix = largo.StateDir + "/tus"

// stagedBytes returns the bytes the target's staging holds for uploads
// (not their records): the staged files of a folder, sparse ones at
// what they take on the disk; the objects and the parts of the multipart
// uploads of a bucket.
func stagedBytes(t testing.TB, g *target) int64 {
	t.Helper()
	record := func(name string) bool {
		return strings.HasSuffix(name, ".info") || strings.HasSuffix(name, ".sha256") || strings.HasSuffix(name, ".asm")
	}
	var n int64
	if g.srv == nil {
		ents, _ := os.ReadDir(filepath.Join(g.dir, filepath.FromSlash(stagingPrefix)))
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && !record(e.Name()) {
				n += fi.Sys().(*syscall.Stat_t).Blocks * 512
			}
		}
		return n
	}
	ctx := context.Background()
	c, bucket := g.srv.Client, g.srv.Bucket
	for _, key := range g.srv.Keys(t, bucket, stagingPrefix+"/") {
		if record(key) {
			continue
		}
		out, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		n += aws.ToInt64(out.ContentLength)
	}
	ups, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: aws.String(stagingPrefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups.Uploads {
		parts, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: &bucket, Key: u.Key, UploadId: u.UploadId})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts.Parts {
			n += aws.ToInt64(p.Size)
		}
	}
	return n
}

// stagingEmpty fails t unless nothing is staged in the target: no file
// in a folder's staging, no object nor multipart upload in a bucket's.
func stagingEmpty(t testing.TB, g *target, after string) {
	t.Helper()
	var left []string
	if g.srv == nil {
		ents, _ := os.ReadDir(filepath.Join(g.dir, filepath.FromSlash(stagingPrefix)))
		for _, e := range ents {
			left = append(left, e.Name())
		}
	} else {
		left = append(g.srv.Keys(t, g.srv.Bucket, stagingPrefix+"/"), g.srv.Uploads(t, g.srv.Bucket, stagingPrefix+"/")...)
	}
	if len(left) > 0 {
		t.Errorf("after %s, the staging holds %v", after, left)
	}
}

// tusDeferred creates a tus upload whose length is not known.
func tusDeferred(t testing.TB, s *server, name string, hdr ...string) string {
	t.Helper()
	h := append([]string{"Tus-Resumable", "1.0.0", "Upload-Defer-Length", "1", "Upload-Metadata", "filename " + b64(name)}, hdr...)
	resp, body := send(t, "POST", s.URL+"_largo/uploads/", nil, 0, h...)
	if resp.StatusCode != 201 {
		t.Fatalf("creation of %s: %s %s", name, resp.Status, body)
	}
	return resp.Header.Get("Location")
}

// tusChunk sends size bytes (chunked when size is -1, n of them) at offset
// to an upload, and returns the answer.
func tusChunk(t testing.TB, u string, offset, size, n int64, hdr ...string) (*http.Response, string) {
	t.Helper()
	body := io.LimitReader(zeros{}, n)
	h := append([]string{"Tus-Resumable", "1.0.0", "Upload-Offset", strconv.FormatInt(offset, 10), "Content-Type", "application/offset+octet-stream"}, hdr...)
	if n == 0 {
		return send(t, "PATCH", u, nil, 0, h...)
	}
	return send(t, "PATCH", u, body, size, h...)
}

// offsetAs returns an upload's offset as user (a header pair), -1 when
// the server knows no such upload.
func offsetAs(t testing.TB, u string, auth ...string) int64 {
	t.Helper()
	resp, _ := send(t, "HEAD", u, nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, auth...)...)
	if resp.StatusCode == 404 {
		return -1
	}
	n, err := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	if err != nil {
		t.Fatalf("HEAD %s: %s, Upload-Offset %q", u, resp.Status, resp.Header.Get("Upload-Offset"))
	}
	return n
}

// TestTusDeferredMaxUpload: under --max-upload 1MB, a tus upload of
// unknown length takes chunks up to the limit and refuses the one that
// would pass it, with 413, before a byte of it is staged; the upload goes
// on from its offset.
func TestTusDeferredMaxUpload(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t, "--max-upload", "1MB")
		u := tusDeferred(t, s, "big.bin", bearer...)
		for _, c := range []struct {
			offset, n  int64
			code       int
			wantOffset int64
		}{
			{0, 2_000_000, 413, 0},
			{0, 600_000, 204, 600_000},
			{600_000, 600_000, 413, 600_000},
		} {
			resp, body := tusChunk(t, u, c.offset, c.n, c.n, bearer...)
			if resp.StatusCode != c.code || c.code == 413 && !strings.Contains(body, "limit") {
				t.Errorf("PATCH of %d bytes at %d: %s %q; want %d", c.n, c.offset, resp.Status, strings.TrimSpace(body), c.code)
			}
			if got, staged := tusOffset(t, u), stagedBytes(t, g); got != c.wantOffset || staged > c.wantOffset+(64<<10) {
				t.Errorf("after %d bytes at %d: offset %d, %d bytes staged; want %d", c.n, c.offset, got, staged, c.wantOffset)
			}
		}
		if resp, _ := send(t, "DELETE", u, nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, bearer...)...); resp.StatusCode != 204 {
			t.Errorf("DELETE: %s", resp.Status)
		}
		stagingEmpty(t, g, "the upload's cancellation")
		g.clean(t)
	})
}

// TestTusDeferredQuota: a user with 100 bytes of quota left cannot stage
// more through an upload of unknown length: its chunks are refused with
// 507 before they are staged, what it staged is hers and no one else's,
// and refused at its end, it leaves nothing in the state area.
func TestTusDeferredQuota(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, admissionAccess)
		s := startServerOn(t, g, "--access", access)
		alice := []string{"Authorization", tokenOf("alice")}
		if code := putAs(t, s, "alice", "a/one", 900); code != 201 {
			t.Fatalf("alice's first 900 bytes: %d", code)
		}
		u := tusDeferred(t, s, "a/two", alice...)
		resp, body := tusChunk(t, u, 0, 5_000_000, 5_000_000, alice...)
		want507(t, "5 MB with 100 bytes left", resp.Status, body, "quota of user alice")
		if got, staged := offsetAs(t, u, alice...), stagedBytes(t, g); got != 0 || staged != 0 {
			t.Errorf("after the refusal: offset %d, %d bytes staged; want nothing", got, staged)
		}
		if resp, body := tusChunk(t, u, 0, 60, 60, alice...); resp.StatusCode != 204 {
			t.Fatalf("60 bytes with 100 left: %s %s", resp.Status, body)
		}
		// What the upload staged is held: no other write takes it.
		st, body := refusedBeforeBody(t, s, "PUT", "a/three", 50, alice...)
		want507(t, "a PUT of 50 bytes while the upload holds 60 of the 100 left", st, body, "quota of user alice")
		// A chunk of unknown length stops where the quota does.
		resp, body = tusChunk(t, u, 60, -1, 5_000, alice...)
		want507(t, "a chunked PATCH past the quota", resp.Status, body, "quota of user alice")
		if got := offsetAs(t, u, alice...); got < 60 || got > 100 {
			t.Errorf("after the chunked PATCH: offset %d; want 60 to 100", got)
		}
		if code := putAs(t, s, "alice", "a/small", 1); code != 201 {
			t.Fatalf("a write that fits: %d", code)
		}
		// Its end: a third file, over her two. Refused, and gone whole.
		off := offsetAs(t, u, alice...)
		resp, body = tusChunk(t, u, off, 0, 0, append(alice, "Upload-Length", strconv.FormatInt(off, 10))...)
		want507(t, "the end of an upload over the files quota", resp.Status, body, "quota of user alice: 2 files")
		if got := offsetAs(t, u, alice...); got != -1 {
			t.Errorf("the upload refused at its end still answers, offset %d", got)
		}
		stagingEmpty(t, g, "the refusal at the end")
		if resp, _ := send(t, "GET", s.URL+"a/two", nil, 0, alice...); resp.StatusCode != 404 {
			t.Errorf("GET /a/two after its refusal: %s", resp.Status)
		}
		g.clean(t)
	})
}

// TestTusDeferredReserve: on a disk with 16 MiB free above --reserve, a
// chunk of 24 MiB is refused with 507 before it is staged, and one of
// unknown length stops at the reserve.
func TestTusDeferredReserve(t *testing.T) {
	dir := t.TempDir()
	testenv.Tmpfs(t, dir, "32m", "to test the reserve")
	s := startWriter(t, dir, "--reserve", "16MiB")
	u := tusDeferred(t, s, "big.bin", bearer...)
	g := &target{kind: "disk", dir: dir}
	if resp, body := tusChunk(t, u, 0, 24<<20, 24<<20, bearer...); resp.StatusCode != 507 {
		t.Errorf("24 MiB with 16 MiB above the reserve: %s %q; want 507", resp.Status, strings.TrimSpace(body))
	}
	if got, staged := tusOffset(t, u), stagedBytes(t, g); got != 0 || staged != 0 {
		t.Errorf("after the refusal: offset %d, %d bytes staged; want nothing", got, staged)
	}
	if resp, body := tusChunk(t, u, 0, -1, 24<<20, bearer...); resp.StatusCode != 507 {
		t.Errorf("24 MiB of unknown length: %s %q; want 507", resp.Status, strings.TrimSpace(body))
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if free := int64(fs.Bavail) * fs.Bsize; free < 15<<20 {
		t.Errorf("%d bytes free after a chunk of unknown length; want the reserve kept", free)
	}
	if got := tusOffset(t, u); got <= 0 || got > 16<<20 {
		t.Errorf("offset %d after the chunk of unknown length; want it cut at the reserve", got)
	}
}

// TestIETFAppendPastMaxUpload: an IETF upload of unknown length refuses,
// before its body is sent, an append that would take it past
// --max-upload (413 with Upload-Limit), and stays where it was.
func TestIETFAppendPastMaxUpload(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t, "--max-upload", "1MB")
		resp, body := put(t, s.URL+"x.bin", strings.NewReader("0123456789"), 10, ietfHeaders("Upload-Complete", "?0")...)
		if resp.StatusCode != 201 {
			t.Fatalf("creation: %s %s", resp.Status, body)
		}
		loc := resp.Header.Get("Location")
		st, body := refusedBeforeBody(t, s, "PATCH", strings.TrimPrefix(loc, "/"), 2_000_000, appendHeaders(10, false)...)
		if !strings.HasPrefix(st, "413") || !strings.Contains(body, "limit") {
			t.Errorf("an append of 2 MB past the limit: %s %q; want 413", st, strings.TrimSpace(body))
		}
		if code, off, _ := uploadState(t, s.URL+strings.TrimPrefix(loc, "/")); code != 204 || off != 10 {
			t.Errorf("the upload after the refusal: %d, offset %d; want it at 10", code, off)
		}
		if staged := stagedBytes(t, g); staged > 64<<10 {
			t.Errorf("%d bytes staged", staged)
		}
		// A body of no announced length is cut at the limit: what came
		// is kept, and the upload stays, where it says it is.
		resp, body = send(t, "PATCH", s.URL+strings.TrimPrefix(loc, "/"), strings.NewReader(strings.Repeat("c", 2_000_000)), -1, appendHeaders(10, false)...)
		if resp.StatusCode != 413 || resp.Header.Get("Upload-Limit") == "" {
			t.Errorf("a chunked append past the limit: %s %q; want 413 with Upload-Limit", resp.Status, strings.TrimSpace(body))
		}
		code, off, _ := uploadState(t, s.URL+strings.TrimPrefix(loc, "/"))
		if code != 204 || off <= 10 || off > 1_000_000 || resp.Header.Get("Upload-Offset") != strconv.FormatInt(off, 10) {
			t.Errorf("the upload after a chunked append past the limit: %d, offset %d (answered %q); want it kept at most at the limit", code, off, resp.Header.Get("Upload-Offset"))
		}
	})
}

// partialAs creates a placed partial of size bytes at at in a file of
// total bytes, and returns the answer's status.
func partialAs(t testing.TB, s *server, id string, size, at, total int64, auth ...string) int {
	t.Helper()
	meta := strings.Join([]string{"filename " + b64("p/file.bin"), "concat-id " + b64(id),
		"concat-offset " + b64(strconv.FormatInt(at, 10)), "concat-length " + b64(strconv.FormatInt(total, 10))}, ",")
	h := append([]string{"Tus-Resumable", "1.0.0", "Upload-Concat", "partial", "Upload-Length", strconv.FormatInt(size, 10), "Upload-Metadata", meta}, auth...)
	resp, _ := send(t, "POST", s.URL+"_largo/uploads/", nil, 0, h...)
	return resp.StatusCode
}

// TestPartialsDeclaredFile: placed partials are checked against the file
// they declare: its length against the quota (and, on a folder, the free
// space) when its first partial is created, so that no sparse file of a
// terabyte is made; partials whose ranges overlap, or that declare
// another length, are refused with 409; the same range again is taken.
func TestPartialsDeclaredFile(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, admissionAccess)
		s := startServerOn(t, g, "--access", access)
		alice := []string{"Authorization", tokenOf("alice")}
		bob := []string{"Authorization", tokenOf("bob")}
		if code := partialAs(t, s, "terabyte1", 10, 1<<40-10, 1<<40, alice...); code != 507 {
			t.Errorf("a terabyte file's last 10 bytes, with a quota of 1000: %d; want 507", code)
		}
		if g.srv == nil {
			for _, total := range []int64{1 << 40, 1 << 62} {
				if code := partialAs(t, s, "terabyte2", 10, total-10, total, bob...); code != 507 {
					t.Errorf("a file of %d bytes' last 10 bytes on this disk: %d; want 507", total, code)
				}
			}
		}
		stagingEmpty(t, g, "the refused partials")
		for _, c := range []struct {
			what            string
			size, at, total int64
			code            int
		}{
			{"the first piece", 100, 0, 200, 201},
			{"a piece overlapping it", 100, 50, 200, 409},
			{"the first piece again", 100, 0, 200, 201},
			{"a piece of a file of another length", 100, 100, 300, 409},
			{"a piece outside the file", 100, 150, 200, 400},
			{"the second piece", 100, 100, 200, 201},
		} {
			if code := partialAs(t, s, "pieces01", c.size, c.at, c.total, alice...); code != c.code {
				t.Errorf("%s: %d; want %d", c.what, code, c.code)
			}
		}
	})
}

// TestMoveAboveQuotaPath: moving a folder to a parent of a quota path
// brings what lies at that path's place in it under the quota: refused
// with 507 by the page's move and by WebDAV MOVE, and nothing moves; a
// folder whose content fits moves.
func TestMoveAboveQuotaPath(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, admissionAccess)
		g.seed(t, "pub/staging/a.txt", "first to move")
		g.seed(t, "pub/staging/deep/big.bin", strings.Repeat("b", 5000))
		g.seed(t, "pub/small/deep/s.txt", strings.Repeat("s", 100))
		s := startServerOn(t, g, "--access", access, "--webdav")
		bob := []string{"Authorization", tokenOf("bob")}
		pageMove := func(from, to string) (*http.Response, string) {
			form := url.Values{"from": {from}, "to": {to}}.Encode()
			return send(t, "POST", s.URL+"_largo/move", strings.NewReader(form), int64(len(form)),
				append(bob, "Content-Type", "application/x-www-form-urlencoded", "Origin", strings.TrimSuffix(s.URL, "/"))...)
		}
		resp, body := pageMove("/pub/staging", "/pub/z")
		want507(t, "the page's move above a quota path", resp.Status, body, "quota of /pub/z/deep")
		resp, body = send(t, "MOVE", s.URL+"pub/staging", nil, 0, append(bob, "Destination", s.URL+"pub/z")...)
		want507(t, "WebDAV MOVE above a quota path", resp.Status, body, "quota of /pub/z/deep")
		for name, code := range map[string]int{"pub/staging/a.txt": 200, "pub/staging/deep/big.bin": 200, "pub/z/a.txt": 404, "pub/z/deep/big.bin": 404} {
			if resp, _ := send(t, "GET", s.URL+name, nil, 0, bob...); resp.StatusCode != code {
				t.Errorf("after the refused moves, GET /%s: %s; want %d", name, resp.Status, code)
			}
		}
		if resp, body := pageMove("/pub/small", "/pub/z"); resp.StatusCode != 201 {
			t.Errorf("a move whose content fits the quota: %s %s", resp.Status, body)
		}
		if resp, _ := send(t, "GET", s.URL+"pub/z/deep/s.txt", nil, 0, bob...); resp.StatusCode != 200 {
			t.Errorf("the moved file: %s", resp.Status)
		}
		g.clean(t)
	})
}

// TestDAVPropertyQuota: a WebDAV dead property counts against the quota
// of who sets it: a user with 100 bytes left cannot store one of 50 KB
// (507 in the PROPPATCH's answer, nothing set); one property over 64 KiB
// is refused whole (413); a folder made counts as one file of her two.
func TestDAVPropertyQuota(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, admissionAccess)
		s := startServerOn(t, g, "--access", access, "--webdav")
		alice := []string{"Authorization", tokenOf("alice")}
		if code := putAs(t, s, "alice", "a/f.txt", 900); code != 201 {
			t.Fatalf("alice's first 900 bytes: %d", code)
		}
		patch := func(name string, size int) (*http.Response, string) {
			body := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:` + name + ` xmlns:Z="urn:x">` +
				strings.Repeat("v", size) + `</Z:` + name + `></D:prop></D:set></D:propertyupdate>`
			return send(t, "PROPPATCH", s.URL+"a/f.txt", strings.NewReader(body), int64(len(body)), alice...)
		}
		resp, body := patch("big", 50_000)
		if resp.StatusCode != 207 || !strings.Contains(body, "507") || !strings.Contains(body, "quota of user alice") {
			t.Errorf("a property of 50 KB with 100 bytes left: %s %.400s; want 207 with 507 naming the quota", resp.Status, body)
		}
		resp, body = patch("huge", 200_000)
		if resp.StatusCode != 413 || !strings.Contains(body, "too large") {
			t.Errorf("a property of 200 KB: %s %.200q; want 413", resp.Status, body)
		}
		find := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`
		_, found := send(t, "PROPFIND", s.URL+"a/f.txt", strings.NewReader(find), int64(len(find)), append(alice, "Depth", "0")...)
		if strings.Contains(found, "big") || strings.Contains(found, "huge") {
			t.Errorf("a refused property was stored: %.400s", found)
		}
		if resp, body := patch("small", 20); resp.StatusCode != 207 || !strings.Contains(body, "200 OK") {
			t.Errorf("a property that fits: %s %.300s", resp.Status, body)
		}
		if resp, body := send(t, "MKCOL", s.URL+"a/d1", nil, 0, alice...); resp.StatusCode != 201 {
			t.Errorf("her second file, a folder: %s %s", resp.Status, body)
		}
		resp, body = send(t, "MKCOL", s.URL+"a/d2", nil, 0, alice...)
		want507(t, "a third file, a folder", resp.Status, body, "quota of user alice: 2 files")
	})
}

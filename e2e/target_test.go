//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"largo/s3/s3test"
)

// target is where a test's writes land: a folder served by largo, or a
// bucket of a real S3 server served with --store s3://. versitygw's posix
// back end keeps every object as a file of its own folder, so in both
// cases what was stored can be checked as files under dir.
type target struct {
	kind string
	dir  string         // where stored files appear as files
	srv  *s3test.Server // nil for a folder
}

// forEachTarget runs f as a subtest on a folder, then on a bucket.
func forEachTarget(t *testing.T, f func(t *testing.T, g *target)) {
	onTargets(t, false, f)
}

// forEachTargetAtOnce runs f as a subtest on a folder and on a bucket
// side by side: for a test that mostly waits (on a clock, not on the
// machine), whose two runs share nothing.
func forEachTargetAtOnce(t *testing.T, f func(t *testing.T, g *target)) {
	onTargets(t, true, f)
}

func onTargets(t *testing.T, atOnce bool, f func(t *testing.T, g *target)) {
	for _, kind := range []string{"disk", "s3"} {
		t.Run(kind, func(t *testing.T) {
			if atOnce {
				t.Parallel()
			}
			g := &target{kind: kind, dir: t.TempDir()}
			if kind == "s3" {
				g.srv = s3test.Start(t, s3test.Options{})
				g.dir = filepath.Join(g.srv.Dir, g.srv.Bucket)
			}
			f(t, g)
		})
	}
}

// serve starts largo on the target with writes on, the test token, an
// admin listener (where metric reads the metrics) and args.
func (g *target) serve(t testing.TB, args ...string) *server {
	t.Helper()
	args = append([]string{"--upload", "--token", testToken, adminListen, "127.0.0.1:0"}, args...)
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

// seed stores a file: written in the folder, or put as an object (which
// gives it an ETag).
func (g *target) seed(t testing.TB, name, content string) {
	t.Helper()
	if g.srv != nil {
		g.srv.Put(t, name, []byte(content))
		return
	}
	p := filepath.Join(g.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// clean fails the test if writes left something behind: temporary files
// in a folder, multipart uploads in a bucket.
func (g *target) clean(t testing.TB) {
	t.Helper()
	if g.srv == nil {
		noTemp(t, g.dir)
		return
	}
	if n := multipartUploads(t, g.srv); n != 0 {
		t.Errorf("%d multipart uploads left in the bucket", n)
	}
}

// multipartUploads counts the multipart uploads in srv's bucket.
// objectSHA returns the sha256 of the object at key in srv's bucket, read
// through the S3 API (so on any engine); "" when there is none.
func objectSHA(t testing.TB, srv *s3test.Server, key string) string {
	t.Helper()
	b, ok := srv.Get(t, srv.Bucket, key)
	if !ok {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func multipartUploads(t testing.TB, srv *s3test.Server) int {
	t.Helper()
	return len(srv.Uploads(t, srv.Bucket, ""))
}

//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/pace"
)

// Bandwidth caps against the real binary, on a folder and a bucket, with
// real clients. A cap is checked by the time a transfer takes at least:
// its bytes beyond the bucket's first burst, at the cap's rate. A loaded
// machine only makes a transfer slower, so the check cannot pass by luck
// and cannot fail by load: without the cap, each of these transfers takes
// milliseconds on loopback.

// capRate is the cap of these tests, and capSize the bytes each transfer
// moves: at least 0.625 s each.
const (
	capRate = 2_000_000
	capSize = 1_500_000
)

// leastTime is the least time n bytes take under a cap of rate from a
// full bucket, which lets its burst through at once.
func leastTime(n, rate int64) time.Duration {
	return time.Duration(float64(n-int64(pace.Burst(rate))) / float64(rate) * float64(time.Second))
}

// timed runs f and fails t unless it took at least the time of n bytes
// under a cap of rate.
func timed(t *testing.T, what string, n, rate int64, f func()) {
	t.Helper()
	start := time.Now()
	f()
	least := leastTime(n, rate)
	if took := time.Since(start); took < least {
		t.Errorf("%s: %d bytes in %s under a cap of %d B/s; at least %s", what, n, took.Round(time.Millisecond), rate, least.Round(time.Millisecond))
	} else {
		t.Logf("%s: %d bytes in %s (at least %s)", what, n, took.Round(time.Millisecond), least.Round(time.Millisecond))
	}
}

// throttled reads the server's seconds throttled by caps of kind.
func throttled(t testing.TB, s *server, kind string) float64 {
	t.Helper()
	return metric(t, s, `largo_throttled_seconds_total{key="`+kind+`"}`)
}

// curlOK runs curl with args and fails t unless it succeeds.
func curlOK(t *testing.T, args ...string) string {
	t.Helper()
	out, err := curl(need(t, "curl"), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// curl runs the curl at bin with args, failing on an error status; it
// may be called from any goroutine.
func curl(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, append([]string{"-sS", "--fail-with-body"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("curl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// TestCapsDownloads: under --rate-per-address, a whole file with curl, a
// range, a folder as an archive, and three connections at once (which
// share the address's cap: together they take three times as long) are
// all held to the cap, from a folder and from a bucket (where the bytes
// are copied, not sent by sendfile).
func TestCapsDownloads(t *testing.T) { forEachTarget(t, capsDownloads) }

func capsDownloads(t *testing.T, g *target) {
	src := filepath.Join(t.TempDir(), "src")
	sha := writeRandom(t, src, capSize, 71)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	g.seed(t, "set/big.bin", string(data))
	g.seed(t, "two.bin", string(data)+string(data))
	s := g.serve(t, "--rate-per-address", strconv.Itoa(capRate))
	out := t.TempDir()

	timed(t, "curl, the whole file", capSize, capRate, func() {
		curlOK(t, "-o", filepath.Join(out, "whole"), s.URL+"set/big.bin")
	})
	if got := fileSHA(t, filepath.Join(out, "whole")); got != sha {
		t.Errorf("downloaded sha %s; want %s", got, sha)
	}

	timed(t, "curl, a range", capSize, capRate, func() {
		curlOK(t, "-r", fmt.Sprintf("%d-%d", capSize, 2*capSize-1), "-o", filepath.Join(out, "range"), s.URL+"two.bin")
	})
	if got := fileSHA(t, filepath.Join(out, "range")); got != sha {
		t.Errorf("the range's sha %s; want %s", got, sha)
	}

	timed(t, "a folder as tar", capSize, capRate, func() {
		resp := get(t, s.URL+"set/?archive=tar")
		n, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 || n < capSize {
			t.Errorf("archive: %d with %d bytes", resp.StatusCode, n)
		}
	})

	timed(t, "three connections of one address", 3*capSize, capRate, func() {
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				req, _ := http.NewRequest("GET", s.URL+"set/big.bin", nil)
				tr := &http.Transport{DisableKeepAlives: true} // a connection each
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				h := sha256.New()
				if n, err := io.Copy(h, resp.Body); err != nil || hex.EncodeToString(h.Sum(nil)) != sha || n != capSize {
					t.Errorf("a connection received %d bytes (%v), not the file", n, err)
				}
			})
		}
		wg.Wait()
	})

	if th := throttled(t, s, "address"); th <= 0 {
		t.Errorf("largo_throttled_seconds_total{key=\"address\"} %v; want the waits counted", th)
	}
	if th := throttled(t, s, "user"); th != 0 {
		t.Errorf("largo_throttled_seconds_total{key=\"user\"} %v; no user cap was set", th)
	}
}

// TestCapsUploads: under --rate-per-address, an upload by each protocol
// is read at the cap: PUT and a form with curl, tus with tus-js-client,
// the IETF protocol with largo put, WebDAV with rclone; to a folder and to
// a bucket, and every file arrives whole.
func TestCapsUploads(t *testing.T) { forEachTarget(t, capsUploads) }

func capsUploads(t *testing.T, g *target) {
	src := filepath.Join(t.TempDir(), "up.bin")
	sha := writeRandom(t, src, capSize, 72)
	s := g.serve(t, "--rate-per-address", strconv.Itoa(capRate), "--webdav")
	auth := "Authorization: Bearer " + testToken

	for _, up := range []struct {
		name, stored string
		run          func(t *testing.T)
	}{
		{"PUT with curl", "put.bin", func(t *testing.T) {
			curlOK(t, "-H", auth, "-T", src, s.URL+"put.bin")
		}},
		{"a form with curl", "forms/form.bin", func(t *testing.T) {
			curlOK(t, "-H", auth, "-F", "file=@"+src+";filename=form.bin", s.URL+"forms/")
		}},
		{"tus with tus-js-client", "tus.bin", func(t *testing.T) {
			cmd := nodeScript(t, "tus-upload.mjs", "--endpoint", s.URL+"_largo/uploads/", "--file", src,
				"--name", "tus.bin", "--token", testToken, "--chunk", strconv.Itoa(capSize))
			if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "done ") {
				t.Fatalf("tus-js-client: %v\n%s", err, tail(string(b), 2000))
			}
		}},
		{"the IETF protocol with largo put", "ietf.bin", func(t *testing.T) {
			if code, out, stderr := runLargo(t, []string{"LARGO_TOKEN=" + testToken}, "put", "--protocol", "ietf", "-q", src, s.URL+"ietf.bin"); code != 0 {
				t.Fatalf("largo put: exit %d\n%s\n%s", code, out, stderr)
			}
		}},
		{"WebDAV with rclone", "dav.bin", func(t *testing.T) {
			cmd := exec.Command(need(t, "rclone"), "copyto", src, ":webdav:dav.bin", "--webdav-url", s.URL,
				"--webdav-vendor", "other", "--webdav-bearer-token", testToken)
			cmd.Env = append(os.Environ(), "RCLONE_CONFIG="+filepath.Join(t.TempDir(), "none.conf"))
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rclone copyto: %v\n%s", err, b)
			}
		}},
	} {
		t.Run(up.name, func(t *testing.T) {
			timed(t, up.name, capSize, capRate, func() { up.run(t) })
			if got := fileSHA(t, filepath.Join(g.dir, filepath.FromSlash(up.stored))); got != sha {
				t.Errorf("%s stored with sha %s; want %s", up.stored, got, sha)
			}
		})
	}
	if th := throttled(t, s, "address"); th <= 0 {
		t.Errorf("largo_throttled_seconds_total{key=\"address\"} %v; want the waits counted", th)
	}
	g.clean(t)
}

// capsAccess is the access file of TestCapsUsers: alice has a cap of her
// own, bob the server's default for users, carol none.
const capsAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
rate = "2MB"

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[user]]
name = "carol"
tokens = ["carol-token-0123456789"]
rate = "0"

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]
`

// TestCapsUsers: a user's cap, from the access file or the default for
// users, is shared by all the user's connections and by the share links
// the user made; a link's own max rate, given by largo share or the
// page's form, governs when lower; a user without a cap is not held at
// all, whatever a capped user beside does.
func TestCapsUsers(t *testing.T) {
	dir := t.TempDir()
	sha := writeRandom(t, filepath.Join(dir, "pub", "big.bin"), capSize, 73)
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(capsAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	// A link alice makes with largo share, with no max rate of its own
	// (which also makes the share key the server will find).
	const at = "http://placeholder"
	code, stdout, stderr := runLargo(t, nil, "share", "--dir", dir, "--access", access, "--as", "alice", "--url", at, "pub")
	if code != 0 || !strings.HasPrefix(stdout, at+"/") {
		t.Fatalf("largo share: exit %d\n%s%s", code, stdout, stderr)
	}
	aliceLink := strings.TrimPrefix(strings.TrimSpace(stdout), at+"/")
	if code, _, stderr := runLargo(t, nil, "share", "--dir", dir, "--access", access, "--as", "alice", "--max-rate", "fast", "pub"); code != 2 || !strings.Contains(stderr, "max-rate") {
		t.Errorf("largo share --max-rate fast: exit %d, %s; want a usage error naming the flag", code, stderr)
	}
	s := startServer(t, dir, "--access", access, "--rate-per-user", "4MB", adminListen, "127.0.0.1:0")
	as := func(user string) []string {
		return []string{"-H", "Authorization: Bearer " + user + "-token-0123456789"}
	}
	out := t.TempDir()

	// carol, uncapped, beside alice, capped.
	bin := need(t, "curl")
	before := throttled(t, s, "user")
	var wg sync.WaitGroup
	var carol error
	timed(t, "alice, two connections", 2*capSize, capRate, func() {
		wg.Go(func() {
			_, carol = curl(bin, append(as("carol"), "-o", filepath.Join(out, "c"), s.URL+"pub/big.bin")...)
		})
		curlOK(t, append(as("alice"), "-o", filepath.Join(out, "a1"), s.URL+"pub/big.bin", "-o", filepath.Join(out, "a2"), s.URL+"pub/big.bin", "--parallel", "--parallel-immediate")...)
		wg.Wait()
	})
	if carol != nil {
		t.Fatal(carol)
	}
	after := throttled(t, s, "user")
	if after <= before {
		t.Errorf("user throttling %v -> %v; want alice's waits counted", before, after)
	}
	for _, f := range []string{"a1", "a2", "c"} {
		if got := fileSHA(t, filepath.Join(out, f)); got != sha {
			t.Errorf("%s: sha %s; want %s", f, got, sha)
		}
	}
	// carol alone: no wait at all.
	before = throttled(t, s, "user")
	curlOK(t, append(as("carol"), "-o", filepath.Join(out, "c2"), s.URL+"pub/big.bin")...)
	if after := throttled(t, s, "user"); after != before {
		t.Errorf("an uncapped user's download waited %v s", after-before)
	}

	// bob has the default for users: 4 MB/s.
	timed(t, "bob, the default for users", 2*capSize, 4_000_000, func() {
		curlOK(t, append(as("bob"), "-o", filepath.Join(out, "b1"), s.URL+"pub/big.bin", "-o", filepath.Join(out, "b2"), s.URL+"pub/big.bin")...)
	})

	// A link alice makes on the page, with a max rate of its own, lower
	// than hers: the link's governs.
	body := curlOK(t, append(as("alice"), "-H", "Origin: "+strings.TrimSuffix(s.URL, "/"),
		"-d", "path=/pub", "-d", "expires=1h", "-d", "max_rate=1MB", s.URL+"_largo/share")...)
	if !strings.Contains(body, `"max_rate":1000000`) {
		t.Fatalf("share form answered %s; want max_rate 1000000", body)
	}
	link := s.URL + strings.TrimPrefix(jsonField(t, body, "url"), "/")
	timed(t, "a link of 1 MB/s", capSize, 1_000_000, func() {
		curlOK(t, "-o", filepath.Join(out, "l"), link+"big.bin")
	})
	if th := throttled(t, s, "link"); th <= 0 {
		t.Errorf("largo_throttled_seconds_total{key=\"link\"} %v; want the link's waits", th)
	}

	// The link made with largo share: alice's own cap, shared with her
	// own downloads.
	link = s.URL + aliceLink
	var viaLink error
	timed(t, "alice and her link at once", 2*capSize, capRate, func() {
		wg.Go(func() { _, viaLink = curl(bin, "-o", filepath.Join(out, "l2"), link+"big.bin") })
		curlOK(t, append(as("alice"), "-o", filepath.Join(out, "a3"), s.URL+"pub/big.bin")...)
		wg.Wait()
	})
	if viaLink != nil {
		t.Fatal(viaLink)
	}
	for _, f := range []string{"l", "l2", "a3"} {
		if got := fileSHA(t, filepath.Join(out, f)); got != sha {
			t.Errorf("%s: sha %s; want %s", f, got, sha)
		}
	}
}

// jsonField returns a string field of a flat JSON object, for a test.
func jsonField(t *testing.T, body, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `"`+name+`":"`)
	v, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		t.Fatalf("no %s in %s", name, body)
	}
	return v
}

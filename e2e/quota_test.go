//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo/s3/s3test"
)

// Quotas against the real binary, on a folder and a bucket: every
// protocol that writes is refused with a 507 naming the quota before the
// body is read, per user and per path, in bytes and in files; a drop box
// counts for its maker; removals give the room back; concurrent writes
// cannot overrun; and one reconcile pass after random writes, removals
// and changes made behind largo's back counts what is there.

const quotaAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "1000"
quota_files = 5

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = ["alice", "bob"]
allow = ["all"]

[[quota]]
path = "/shared"
bytes = "1500"
files = 4
`

func tokenOf(user string) string { return "Bearer " + user + "-token-0123456789" }

// largoIn runs a largo command on the target's store.
func largoIn(t *testing.T, g *target, args ...string) string {
	t.Helper()
	cmd := exec.Command(largoBin, args...)
	if g.srv == nil {
		cmd.Args = append(cmd.Args, g.dir)
	} else {
		cmd.Args = append(cmd.Args, "--store", "s3://"+g.srv.Bucket+"/")
		cmd.Env = append(os.Environ(), g.srv.Env()...)
	}
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("largo %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// refusedBeforeBody sends a request's head announcing size bytes with
// Expect: 100-continue, and returns the answer's status line and body:
// it fails t if the server asks for the body (100 Continue) first.
func refusedBeforeBody(t *testing.T, s *server, method, path string, size int, hdr ...string) (string, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	head := fmt.Sprintf("%s /%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", method, path, size)
	for i := 0; i+1 < len(hdr); i += 2 {
		head += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s /%s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusContinue {
		t.Fatalf("%s /%s: 100 Continue: the server asked for a body it should refuse", method, path)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.Status, string(b)
}

// want507 fails t unless status and body are a 507 that names quota.
func want507(t *testing.T, what, status, body, quota string) {
	t.Helper()
	if !strings.HasPrefix(status, "507") || !strings.Contains(body, quota) {
		t.Errorf("%s: %s %q; want 507 naming %q", what, status, strings.TrimSpace(body), quota)
	}
}

func putAs(t *testing.T, s *server, user, name string, size int) int {
	t.Helper()
	resp, body := send(t, "PUT", s.URL+name, strings.NewReader(strings.Repeat("q", size)), int64(size), "Authorization", tokenOf(user))
	if resp.StatusCode >= 300 && resp.StatusCode != 507 {
		t.Fatalf("PUT /%s as %s: %s %s", name, user, resp.Status, body)
	}
	return resp.StatusCode
}

// quotaUsage runs largo usage --json on the target and returns each
// line's usage by its name ("user NAME", "/PATH").
func quotaUsage(t *testing.T, g *target, access string, reconcile bool) map[string][2]int64 {
	t.Helper()
	args := []string{"usage", "--json", "--access", access}
	if reconcile {
		args = append(args, "--reconcile")
	}
	var out struct {
		Quotas []struct {
			Quota string
			Used  struct{ Bytes, Files int64 }
		}
	}
	text := largoIn(t, g, args...)
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("largo usage: %v\n%s", err, text)
	}
	got := map[string][2]int64{}
	for _, q := range out.Quotas {
		if q.Used.Bytes != 0 || q.Used.Files != 0 {
			got[q.Quota] = [2]int64{q.Used.Bytes, q.Used.Files}
		}
	}
	return got
}

func TestQuotaProtocols(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, quotaAccess)
		s := startServerOn(t, g, "--access", access, "--webdav", "--quota-sync", "100ms")
		alice := []string{"Authorization", tokenOf("alice")}
		if code := putAs(t, s, "alice", "a/one", 600); code != 201 {
			t.Fatalf("alice's first 600 bytes: %d", code)
		}
		const aliceFull = "quota of user alice: 1000 B, 600 B used"

		// Every protocol, refused before its body.
		st, body := refusedBeforeBody(t, s, "PUT", "a/two", 600, alice...)
		want507(t, "PUT", st, body, aliceFull)
		st, body = refusedBeforeBody(t, s, "PUT", "a/two", 600, append(alice, "Upload-Draft-Interop-Version", "6", "Upload-Complete", "?1")...)
		want507(t, "IETF resumable PUT", st, body, aliceFull)
		st, body = refusedBeforeBody(t, s, "POST", "a/", 600, append(alice, "Content-Type", "multipart/form-data; boundary=xyz")...)
		want507(t, "form POST", st, body, aliceFull)
		st, body = refusedBeforeBody(t, s, "POST", "_largo/uploads/", 0, append(alice, "Tus-Resumable", "1.0.0", "Upload-Length", "600",
			"Upload-Metadata", "filename "+b64("two")+",folder "+b64("a"))...)
		want507(t, "tus creation", st, body, aliceFull)
		resp, body := send(t, "COPY", s.URL+"a/one", nil, 0, append(alice, "Destination", s.URL+"a/copy")...)
		want507(t, "WebDAV COPY", resp.Status, body, aliceFull)
		// A chunked body, whose length is not known: cut where the quota ends.
		cmd := exec.Command("curl", "-s", "-w", "\n%{http_code}", "-T", "-", "-H", "Authorization: "+tokenOf("alice"), s.URL+"a/chunked")
		cmd.Stdin = strings.NewReader(strings.Repeat("c", 5000))
		out, _ := cmd.CombinedOutput()
		want507(t, "chunked PUT", strings.TrimSpace(string(out[strings.LastIndexByte(string(out), '\n')+1:])), string(out), "quota of user alice")
		// largo put speaks tus.
		f := filepath.Join(t.TempDir(), "f")
		os.WriteFile(f, []byte(strings.Repeat("p", 600)), 0o600)
		cmd = exec.Command(largoBin, "put", f, s.URL+"a/put")
		cmd.Env = append(os.Environ(), "LARGO_TOKEN=alice-token-0123456789")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "quota of user alice") {
			t.Errorf("largo put over the quota: %v\n%s", err, out)
		}
		for _, name := range []string{"a/two", "a/copy", "a/chunked", "a/put"} {
			if got := curlStatus(t, s.URL+name); got != "404" {
				t.Errorf("GET /%s after its refusal: %s; want 404", name, got)
			}
		}
		// What fits still passes, through each protocol.
		if code := putAs(t, s, "alice", "a/fits", 300); code != 201 {
			t.Errorf("a PUT that fits: %d", code)
		}
		if got := curlStatus(t, "-H", "Authorization: "+tokenOf("alice"), "-F", "f=@"+f+";filename=form", s.URL+"a/"); got != "507" {
			t.Errorf("a form's file of 600 bytes, with 100 left: %s; want 507", got)
		}
		if got := curlStatus(t, s.URL+"a/form"); got != "404" {
			t.Errorf("a form's file over the quota was stored: %s", got)
		}

		// Files: alice may own 5.
		for i := range 3 {
			putAs(t, s, "alice", fmt.Sprintf("a/small%d", i), 1)
		}
		st, body = refusedBeforeBody(t, s, "PUT", "a/small3", 1, alice...)
		want507(t, "a sixth file", st, body, "quota of user alice: 5 files, 5 used")
		// A removal gives room back.
		if resp, _ := send(t, "DELETE", s.URL+"a/small0", nil, 0, alice...); resp.StatusCode != 204 {
			t.Fatalf("DELETE: %s", resp.Status)
		}
		if code := putAs(t, s, "alice", "a/small3", 1); code != 201 {
			t.Errorf("a write after a removal: %d", code)
		}

		// A path's quota, whoever writes.
		if code := putAs(t, s, "bob", "shared/b1", 1200); code != 201 {
			t.Fatalf("bob's 1200 bytes in /shared: %d", code)
		}
		st, body = refusedBeforeBody(t, s, "PUT", "shared/b2", 400, "Authorization", tokenOf("bob"))
		want507(t, "a path's quota", st, body, "quota of /shared: 1.5 KiB, 1.2 KiB used")
		// Moving a file in counts too (a rename on a folder, copies on a
		// bucket), through WebDAV and the page alike; the file stays.
		resp, body = send(t, "MOVE", s.URL+"a/one", nil, 0, append(alice, "Destination", s.URL+"shared/one")...)
		want507(t, "WebDAV MOVE into a path's quota", resp.Status, body, "quota of /shared: 1.5 KiB, 1.2 KiB used")
		form := "from=/a/one&to=/shared/one"
		resp, body = send(t, "POST", s.URL+"_largo/move", strings.NewReader(form), int64(len(form)),
			append(alice, "Content-Type", "application/x-www-form-urlencoded", "Origin", strings.TrimSuffix(s.URL, "/"))...)
		want507(t, "the page's move into a path's quota", resp.Status, body, "quota of /shared")
		if got := curlStatus(t, s.URL+"a/one"); got != "200" {
			t.Errorf("a move refused: GET /a/one %s; want 200", got)
		}

		// A drop box counts for its maker: alice has 397 bytes left, and
		// a file.
		if resp, _ := send(t, "DELETE", s.URL+"a/fits", nil, 0, alice...); resp.StatusCode != 204 {
			t.Fatalf("DELETE: %s", resp.Status)
		}
		g.seed(t, "drop/seed.txt", "seed") // a drop box needs its folder
		link := dropLink(t, g, s, access, "alice", "/drop")
		st, body = refusedBeforeBody(t, s, "PUT", strings.TrimPrefix(link, s.URL)+"x", 500)
		want507(t, "a drop box", st, body, "quota of the link's maker: 1000 B, 603 B used")
		if resp, body := send(t, "PUT", link+"y", strings.NewReader("drop"), 4, "Content-Type", "text/plain"); resp.StatusCode != 201 {
			t.Fatalf("a small drop: %s %s", resp.Status, body)
		}

		// The metrics and largo usage say the same.
		want := map[string][2]int64{"user alice": {607, 5}, "user bob": {1200, 1}, "/shared": {1200, 1}}
		if !waitFor(5*time.Second, func() bool { return fmt.Sprint(quotaUsage(t, g, access, false)) == fmt.Sprint(want) }) {
			t.Errorf("largo usage: %v; want %v", quotaUsage(t, g, access, false), want)
		}
		if got := metric(t, s, `largo_quota_used_bytes{quota="user:alice"}`); got != 607 {
			t.Errorf("largo_quota_used_bytes of alice: %v; want 607", got)
		}
		if got := metric(t, s, `largo_quota_limit_files{quota="path:/shared"}`); got != 4 {
			t.Errorf("largo_quota_limit_files of /shared: %v; want 4", got)
		}
		g.clean(t)
	})
}

// startServerOn starts largo on the target with args (no token) and an
// admin listener, where metric reads the metrics.
func startServerOn(t *testing.T, g *target, args ...string) *server {
	t.Helper()
	args = append([]string{adminListen, "127.0.0.1:0"}, args...)
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

// dropLink makes a drop box at path with largo share, as user.
func dropLink(t *testing.T, g *target, s *server, access, user, path string) string {
	t.Helper()
	args := []string{"share", path, "--write", "--access", access, "--as", user, "--url", strings.TrimSuffix(s.URL, "/")}
	cmd := exec.Command(largoBin, args...)
	if g.srv == nil {
		cmd.Args = append(cmd.Args, "--dir", g.dir)
	} else {
		cmd.Args = append(cmd.Args, "--store", "s3://"+g.srv.Bucket+"/")
		cmd.Env = append(os.Environ(), g.srv.Env()...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("largo share: %v\n%s", err, out)
	}
	l := strings.TrimSpace(string(out))
	if !strings.HasSuffix(l, "/") {
		l += "/"
	}
	return l
}

// TestQuotaConcurrent: writes in flight hold their size, so that many
// sent at once cannot together overrun a quota.
func TestQuotaConcurrent(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, quotaAccess)
		s := startServerOn(t, g, "--access", access)
		var wg sync.WaitGroup
		codes := make([]int, 12)
		for i := range codes {
			wg.Go(func() {
				req, _ := http.NewRequest("PUT", fmt.Sprintf("%sshared/c%d", s.URL, i), strings.NewReader(strings.Repeat("x", 400)))
				req.Header.Set("Authorization", tokenOf("bob"))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			})
		}
		wg.Wait()
		ok := 0
		for _, c := range codes {
			switch c {
			case 201:
				ok++
			case 507:
			default:
				t.Errorf("a concurrent write answered %d", c)
			}
		}
		if ok != 3 {
			t.Errorf("%d writes of 400 bytes stored under a quota of 1500; want 3 (codes %v)", ok, codes)
		}
		got := quotaUsage(t, g, access, true)["/shared"]
		if got[0] > 1500 || got[0] != int64(ok*400) {
			t.Errorf("/shared holds %v after a count; want %d bytes", got, ok*400)
		}
	})
}

// TestQuotaReconcile: 1,000 random writes and removals through the
// server, and changes behind its back (on the disk, or straight into the
// bucket), then one reconcile pass: largo usage, and the server's
// metrics after it, say what a walk of the files finds.
func TestQuotaReconcile(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, `
[[user]]
name = "u0"
tokens = ["u0-token-0123456789"]
quota = "1GB"

[[user]]
name = "u1"
tokens = ["u1-token-0123456789"]
quota = "1GB"

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = ["u0", "u1"]
allow = ["all"]

[[quota]]
path = "/"
files = 100000

[[quota]]
path = "/p"
bytes = "1GB"
`)
		s := startServerOn(t, g, "--access", access, "--quota-sync", "100ms")
		rng := rand.New(rand.NewPCG(7, uint64(len(g.kind))))
		names := []string{"p/1", "p/2", "p/3", "p/q/4", "p/q/5", "r/6", "r/7", "8", "9", "p/q/r/10"}
		owner := map[string]string{} // what each user wrote, while unchanged
		for range 1000 {
			name := names[rng.IntN(len(names))]
			switch op := rng.IntN(10); {
			case op < 6:
				u := []string{"u0", "u1"}[rng.IntN(2)]
				if code := putAs(t, s, u, name, rng.IntN(100)); code == 201 || code == 204 {
					owner[name] = u
				}
			case op < 8:
				resp, _ := send(t, "DELETE", s.URL+name, nil, 0, "Authorization", tokenOf("u0"))
				if resp.StatusCode != 204 && resp.StatusCode != 404 {
					t.Fatalf("DELETE /%s: %s", name, resp.Status)
				}
				delete(owner, name)
			case op < 9:
				g.seed(t, name, strings.Repeat("o", 1+rng.IntN(150))) // behind its back
				delete(owner, name)
			default:
				g.unseed(t, name)
				delete(owner, name)
			}
		}
		want := map[string][2]int64{}
		for name, size := range g.files(t) {
			for _, p := range []string{"", "p"} {
				if p == "" || strings.HasPrefix(name, p+"/") {
					w := want["/"+p]
					want["/"+p] = [2]int64{w[0] + size, w[1] + 1}
				}
			}
			if u, ok := owner[name]; ok {
				w := want["user "+u]
				want["user "+u] = [2]int64{w[0] + size, w[1] + 1}
			}
		}
		got := quotaUsage(t, g, access, true)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after one pass, largo usage says\n%v\nand the files\n%v", got, want)
		}
		t.Logf("after 1,000 operations and one pass: %v", got)
		// The server reads the count at its next sync.
		bytes := float64(want["/p"][0])
		if !waitFor(5*time.Second, func() bool { return metric(t, s, `largo_quota_used_bytes{quota="path:/p"}`) == bytes }) {
			t.Errorf("the server's /p: %v bytes; want %v", metric(t, s, `largo_quota_used_bytes{quota="path:/p"}`), bytes)
		}
	})
}

// unseed removes a file behind largo's back: from the folder, or
// straight from the bucket.
func (g *target) unseed(t testing.TB, name string) {
	t.Helper()
	if g.srv == nil {
		os.Remove(filepath.Join(g.dir, filepath.FromSlash(name)))
		return
	}
	_, err := g.srv.Client.DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: &g.srv.Bucket, Key: &name})
	if err != nil {
		t.Fatal(err)
	}
}

// files returns the size of every file in the target, but largo's own
// state: walked in the folder, listed in the bucket.
func (g *target) files(t testing.TB) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if g.srv != nil {
		p := awss3.NewListObjectsV2Paginator(g.srv.Client, &awss3.ListObjectsV2Input{Bucket: &g.srv.Bucket})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				if !strings.HasPrefix(*o.Key, ".largo/") && !strings.HasSuffix(*o.Key, "/") {
					out[*o.Key] = *o.Size
				}
			}
		}
		return out
	}
	filepath.Walk(g.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if fi.IsDir() && strings.HasPrefix(fi.Name(), ".") {
			return filepath.SkipDir
		}
		if !fi.IsDir() {
			rel, _ := filepath.Rel(g.dir, p)
			out[filepath.ToSlash(rel)] = fi.Size()
		}
		return nil
	})
	return out
}

// TestQuotaReplicas: two instances serving one bucket share the usage
// within one sync period: what one stores, the other counts once both
// have synced, and refuses what would overrun.
func TestQuotaReplicas(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	access := writeAccessFile(t, quotaAccess)
	a := startS3Largo(t, srv, "", "--access", access, "--quota-sync", "200ms", adminListen, "127.0.0.1:0")
	b := startS3Largo(t, srv, "", "--access", access, "--quota-sync", "200ms", adminListen, "127.0.0.1:0")
	if code := putAs(t, a, "alice", "a/one", 700); code != 201 {
		t.Fatalf("700 bytes through one instance: %d", code)
	}
	start := time.Now()
	if !waitFor(10*time.Second, func() bool { return metric(t, b, `largo_quota_used_bytes{quota="user:alice"}`) == 700 }) {
		t.Fatalf("the other instance counts %v bytes of alice's; want 700", metric(t, b, `largo_quota_used_bytes{quota="user:alice"}`))
	}
	t.Logf("the other instance counted the write after %s (sync period 200ms)", time.Since(start).Round(time.Millisecond))
	st, body := refusedBeforeBody(t, b, "PUT", "a/two", 400, "Authorization", tokenOf("alice"))
	want507(t, "over the quota through the other instance", st, body, "quota of user alice: 1000 B, 700 B used")
	// A removal through the other instance gives the room back to both.
	if resp, _ := send(t, "DELETE", b.URL+"a/one", nil, 0, "Authorization", tokenOf("alice")); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	if !waitFor(10*time.Second, func() bool { return metric(t, a, `largo_quota_used_bytes{quota="user:alice"}`) == 0 }) {
		t.Fatalf("after the removal the first instance counts %v bytes", metric(t, a, `largo_quota_used_bytes{quota="user:alice"}`))
	}
	if code := putAs(t, a, "alice", "a/two", 900); code != 201 {
		t.Errorf("900 bytes after the removal: %d", code)
	}
}

// TestQuotaReload: quotas follow the access file when it is reloaded.
func TestQuotaReload(t *testing.T) {
	dir := t.TempDir()
	access := writeAccessFile(t, quotaAccess)
	s := startServer(t, dir, "--access", access)
	if code := putAs(t, s, "alice", "a/one", 600); code != 201 {
		t.Fatalf("600 bytes: %d", code)
	}
	if code := putAs(t, s, "alice", "a/two", 600); code != 507 {
		t.Fatalf("600 more under a quota of 1000: %d; want 507", code)
	}
	more := strings.Replace(quotaAccess, `quota = "1000"`, `quota = "2000"`, 1) + "\n[[quota]]\npath = \"/x\"\nfiles = 1\n"
	if err := os.WriteFile(access, []byte(more), 0o600); err != nil {
		t.Fatal(err)
	}
	s.signal(syscall.SIGHUP)
	if !waitFor(5*time.Second, func() bool { return putAs(t, s, "alice", "a/two", 600) == 201 }) {
		t.Fatal("after a reload that raised her quota, alice's write is still refused")
	}
	if code := putAs(t, s, "bob", "x/1", 1); code != 201 {
		t.Fatalf("the first file under a new quota of one file: %d", code)
	}
	st, body := refusedBeforeBody(t, s, "PUT", "x/2", 1, "Authorization", tokenOf("bob"))
	want507(t, "a new path's quota", st, body, "quota of /x: 1 files, 1 used")
}

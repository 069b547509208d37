//go:build e2e

package e2e

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Resumable uploads belong to the principal that made them: nobody else
// reaches them, and they are stored with their maker's rights as they are
// when the last byte arrives. Checked against the real binary, on a
// folder and on a bucket, with curl for the hand-made requests and
// tus-js-client as a client nobody here wrote.

// ownerAccess is the access file of the owner tests: everyone reads and
// lists; alice and bob (or the writers given) write into /in.
func ownerAccess(writers string) string {
	return `
[[user]]
name = "alice"
tokens = ["` + aliceToken + `"]

[[user]]
name = "bob"
tokens = ["` + bobToken + `"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/in"
users = [` + writers + `]
allow = ["all"]
`
}

// ownerServer starts largo on g with ownerAccess and a file in /in, and
// returns it with its access file.
func ownerServer(t *testing.T, g *target, extra ...string) (*server, string) {
	t.Helper()
	file := writeAccessFile(t, ownerAccess(`"alice", "bob"`))
	g.seed(t, "in/seed.txt", "seed") // the folder a drop box is made on
	args := append([]string{"--upload", "--access", file}, extra...)
	if g.srv == nil {
		return startServer(t, g.dir, args...), file
	}
	return startS3Largo(t, g.srv, "", args...), file
}

// bearerOf is the field of a token, as a name and a value.
func bearerOf(token string) []string { return []string{"Authorization", "Bearer " + token} }

// ietf9 are the fields of an IETF request in interop version 9.
var ietf9 = []string{"Upload-Draft-Interop-Version", "9"}

// tusStart begins a tus upload of size bytes to name for hdr's user, and
// returns its URL.
func tusStart(t *testing.T, s *server, name string, size int, hdr ...string) string {
	t.Helper()
	meta := "filename " + base64.StdEncoding.EncodeToString([]byte(name))
	resp, body := send(t, "POST", s.URL+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0",
		"Upload-Length", strconv.Itoa(size), "Upload-Metadata", meta}, hdr...)...)
	if resp.StatusCode != 201 {
		t.Fatalf("tus creation of %s: %d %s", name, resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

// ietfStart begins an IETF upload with a PUT of its first bytes to url
// (not the last ones), and returns its upload URL.
func ietfStart(t *testing.T, s *server, url, data string, hdr ...string) string {
	t.Helper()
	resp, body := send(t, "PUT", url, strings.NewReader(data), int64(len(data)), append(append([]string{"Upload-Complete", "?0"}, ietf9...), hdr...)...)
	if resp.StatusCode != 201 || resp.Header.Get("Location") == "" {
		t.Fatalf("IETF creation at %s: %d %s", url, resp.StatusCode, body)
	}
	return s.URL + strings.TrimPrefix(resp.Header.Get("Location"), "/")
}

// curlOn sends a request on an upload with curl, as token's user (none:
// anonymous), and returns its status: HEAD, DELETE, or a PATCH of data at
// offset that ends the upload.
func curlOn(t *testing.T, proto, method, url, token string, offset int, data string) string {
	t.Helper()
	var args []string
	if token != "" {
		args = append(args, "-H", "Authorization: Bearer "+token)
	}
	if proto == "tus" {
		args = append(args, "-H", "Tus-Resumable: 1.0.0")
	} else {
		args = append(args, "-H", "Upload-Draft-Interop-Version: 9")
	}
	switch method {
	case "HEAD":
		args = append(args, "-I")
	case "DELETE":
		args = append(args, "-X", "DELETE")
	case "PATCH":
		args = append(args, "-X", "PATCH", "-H", "Upload-Offset: "+strconv.Itoa(offset), "--data-binary", data)
		if proto == "tus" {
			args = append(args, "-H", "Content-Type: application/offset+octet-stream")
		} else {
			args = append(args, "-H", "Content-Type: application/partial-upload", "-H", "Upload-Complete: ?1")
		}
	}
	return curlStatus(t, append(args, url)...)
}

// holds fails the test unless name under g holds want.
func holds(t *testing.T, g *target, name, want string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(name))); err != nil || string(b) != want {
		t.Errorf("%s holds %q (%v); want %q", name, b, err, want)
	}
}

// TestOwnerOnly: a tus upload and an IETF upload answer only the user
// who made them: another user, or anonymous, gets 404 for HEAD, PATCH and
// DELETE, as for an upload that does not exist, and changes nothing; the
// maker goes on and finishes, and the record of the finished upload is
// the maker's too.
func TestOwnerOnly(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		s, _ := ownerServer(t, g)
		alice := bearerOf(aliceToken)
		tus := tusStart(t, s, "in/t.bin", 10, alice...)
		if code := curlOn(t, "tus", "PATCH", tus, aliceToken, 0, "hello"); code != "204" {
			t.Fatalf("alice's first tus PATCH: %s", code)
		}
		ietf := ietfStart(t, s, s.URL+"in/i.bin", "hello", alice...)
		uploads := map[string]string{"tus": tus, "ietf": ietf}
		for _, who := range []string{bobToken, ""} {
			for proto, url := range uploads {
				for _, method := range []string{"HEAD", "PATCH", "DELETE"} {
					if code := curlOn(t, proto, method, url, who, 5, "WORLD"); code != "404" {
						t.Errorf("%s %s by %q on alice's upload: %s; want 404", proto, method, who, code)
					}
				}
			}
		}
		resp, _ := send(t, "HEAD", tus, nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, alice...)...)
		if resp.StatusCode != 200 || resp.Header.Get("Upload-Offset") != "5" {
			t.Fatalf("alice's tus HEAD after the others': %d, offset %q", resp.StatusCode, resp.Header.Get("Upload-Offset"))
		}
		resp, _ = send(t, "HEAD", ietf, nil, 0, append(ietf9, alice...)...)
		if resp.StatusCode != 204 || resp.Header.Get("Upload-Offset") != "5" {
			t.Fatalf("alice's IETF HEAD after the others': %d, offset %q", resp.StatusCode, resp.Header.Get("Upload-Offset"))
		}
		if code := curlOn(t, "tus", "PATCH", tus, aliceToken, 5, "world"); code != "204" {
			t.Errorf("alice's last tus PATCH: %s", code)
		}
		if code := curlOn(t, "ietf", "PATCH", ietf, aliceToken, 5, "world"); code != "201" {
			t.Errorf("alice's last IETF PATCH: %s", code)
		}
		holds(t, g, "in/t.bin", "helloworld")
		holds(t, g, "in/i.bin", "helloworld")
		for proto, url := range uploads {
			if code := curlOn(t, proto, "HEAD", url, bobToken, 0, ""); code != "404" {
				t.Errorf("bob's %s HEAD on alice's finished upload: %s; want 404", proto, code)
			}
			want := map[string]string{"tus": "200", "ietf": "204"}[proto]
			if code := curlOn(t, proto, "HEAD", url, aliceToken, 0, ""); code != want {
				t.Errorf("alice's %s HEAD on her finished upload: %s; want %s", proto, code, want)
			}
		}
		g.clean(t)
	})
}

// TestOwnerTusJSClient: tus-js-client resuming another user's upload by
// its URL is told there is no such upload, and begins one of its own from
// the first byte; the first user's upload is untouched, and her own
// client resumes it where it stopped.
func TestOwnerTusJSClient(t *testing.T) {
	const size, chunk, stop = 24 << 20, 4 << 20, 8 << 20
	src := filepath.Join(t.TempDir(), "clip.bin")
	want := writeRandom(t, src, size, 61)
	g := &target{kind: "disk", dir: t.TempDir()}
	s, _ := ownerServer(t, g)
	args := []string{"--endpoint", s.URL + "_largo/uploads/", "--file", src, "--name", "in/clip.bin", "--chunk", strconv.Itoa(chunk)}
	first, aliceURL, accepted := stoppedTusClient(t, append(args, "--token", aliceToken, "--stop-at", strconv.Itoa(stop)), stop)
	first.Process.Kill()
	first.Wait()
	offset := func(token string) string {
		resp, _ := send(t, "HEAD", aliceURL, nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, bearerOf(token)...)...)
		return strconv.Itoa(resp.StatusCode) + " " + resp.Header.Get("Upload-Offset")
	}
	if got := offset(aliceToken); got != "200 "+strconv.FormatInt(accepted, 10) {
		t.Fatalf("alice's upload after her client stopped: %s; want 200 %d", got, accepted)
	}

	// Bob's client, given alice's URL, starts an upload of its own.
	out, err := nodeScript(t, "tus-upload.mjs", append(args, "--token", bobToken, "--url", aliceURL)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done ") {
		t.Fatalf("bob's client: %v\n%s", err, tail(string(out), 2000))
	}
	if m := regexp.MustCompile(`chunk (\d+) `).FindStringSubmatch(string(out)); m == nil || m[1] != strconv.Itoa(chunk) {
		t.Errorf("bob's client's first chunk: %v; want one ending at %d (a new upload, not alice's resumed)", m, chunk)
	}
	if strings.Contains(string(out), "done "+aliceURL) {
		t.Errorf("bob's client finished alice's upload:\n%s", out)
	}
	if got := offset(aliceToken); got != "200 "+strconv.FormatInt(accepted, 10) {
		t.Errorf("alice's upload after bob's client: %s; want 200 %d", got, accepted)
	}
	if got := offset(bobToken); got != "404 " {
		t.Errorf("bob's HEAD on alice's upload: %s; want 404", got)
	}

	// Alice's own client resumes hers.
	out, err = nodeScript(t, "tus-upload.mjs", append(args, "--token", aliceToken, "--url", aliceURL)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done "+aliceURL) {
		t.Fatalf("alice's second client: %v\n%s", err, tail(string(out), 2000))
	}
	if m := regexp.MustCompile(`chunk (\d+) `).FindStringSubmatch(string(out)); m == nil || m[1] == strconv.Itoa(chunk) {
		t.Errorf("alice's second client's first chunk: %v; want a resume after %d", m, accepted)
	}
	if got := fileSHA(t, filepath.Join(g.dir, "in", "clip.bin")); got != want {
		t.Errorf("stored sha %s; want %s", got, want)
	}
}

// TestOwnerRightsAtEnd: an upload is stored with its maker's rights as
// they are when its last byte arrives. Alice begins two uploads, the
// rules are reloaded so that she may no longer write there, and her last
// bytes are refused (403) with nothing stored; bob, who may still write
// there, cannot finish them for her (404).
func TestOwnerRightsAtEnd(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		s, file := ownerServer(t, g)
		alice := bearerOf(aliceToken)
		tus := tusStart(t, s, "in/r.bin", 10, alice...)
		if code := curlOn(t, "tus", "PATCH", tus, aliceToken, 0, "hello"); code != "204" {
			t.Fatalf("alice's first tus PATCH: %s", code)
		}
		ietf := ietfStart(t, s, s.URL+"in/s.bin", "hello", alice...)
		if err := os.WriteFile(file, []byte(ownerAccess(`"bob"`)), 0o600); err != nil {
			t.Fatal(err)
		}
		s.signal(syscall.SIGHUP)
		if !waitFor(10*time.Second, func() bool {
			resp, _ := send(t, "PUT", s.URL+"in/probe.txt", strings.NewReader("p"), 1, alice...)
			return resp.StatusCode == http.StatusForbidden
		}) {
			t.Fatal("the reloaded rules are not in force")
		}
		uploads := map[string]string{"tus": tus, "ietf": ietf}
		for proto, url := range uploads {
			if code := curlOn(t, proto, "PATCH", url, bobToken, 5, "world"); code != "404" {
				t.Errorf("bob's last %s PATCH on alice's upload: %s; want 404", proto, code)
			}
			if code := curlOn(t, proto, "PATCH", url, aliceToken, 5, "world"); code != "403" {
				t.Errorf("alice's last %s PATCH without the right to write: %s; want 403", proto, code)
			}
			if code := curlOn(t, proto, "HEAD", url, aliceToken, 0, ""); code != "404" {
				t.Errorf("alice's refused %s upload: HEAD %s; want 404 (removed)", proto, code)
			}
		}
		absent(t, g.dir, "in/r.bin")
		absent(t, g.dir, "in/s.bin")
		g.clean(t)
	})
}

// TestOwnerDropBox: an IETF upload made through a drop box is the
// link's: whoever holds its URL resumes it without credentials, and it is
// stored as the link would store it when its last byte arrives: as a new
// file only, even when a user who may replace files sends that byte, and
// not at all once the link is revoked.
func TestOwnerDropBox(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		s, _ := ownerServer(t, g)
		drop := shareLink(t, g, s, "/in", "--write")
		up := ietfStart(t, s, drop+"d1.txt", "hel")
		if code := curlOn(t, "ietf", "HEAD", up, "", 0, ""); code != "204" {
			t.Errorf("anonymous HEAD on the drop box's upload: %s; want 204", code)
		}
		if code := curlOn(t, "ietf", "PATCH", up, "", 3, "lo"); code != "201" {
			t.Errorf("anonymous last PATCH on the drop box's upload: %s; want 201", code)
		}
		holds(t, g, "in/d1.txt", "hello")

		up = ietfStart(t, s, drop+"d2.txt", "hel")
		g.seed(t, "in/d2.txt", "first")
		if code := curlOn(t, "ietf", "PATCH", up, bobToken, 3, "lo"); code != "412" {
			t.Errorf("bob's last PATCH on the drop box's upload, over a file made meanwhile: %s; want 412", code)
		}
		holds(t, g, "in/d2.txt", "first")

		up = ietfStart(t, s, drop+"d3.txt", "hel")
		token := strings.Split(strings.TrimSuffix(drop[strings.Index(drop, "/_largo/s/")+len("/_largo/s/"):], "/"), ".")
		if len(token) != 3 {
			t.Fatalf("a share link's token of another form: %s", drop)
		}
		revoke := []string{"share", "--revoke", token[1]}
		var env []string
		if g.srv == nil {
			revoke = append(revoke, "--dir", g.dir)
		} else {
			revoke = append(revoke, "--store", "s3://"+g.srv.Bucket+"/")
			env = g.srv.Env()
		}
		if code, out, stderr := runLargo(t, env, revoke...); code != 0 {
			t.Fatalf("largo share --revoke: exit %d\n%s\n%s", code, out, stderr)
		}
		if !waitFor(20*time.Second, func() bool { return curlStatus(t, "-X", "OPTIONS", drop) == "403" }) {
			t.Fatal("the revoked link still works")
		}
		if code := curlOn(t, "ietf", "PATCH", up, "", 3, "lo"); code != "403" {
			t.Errorf("the last PATCH of an upload through a revoked link: %s; want 403", code)
		}
		absent(t, g.dir, "in/d3.txt")
		g.clean(t)
	})
}

// TestOwnerServerKeys: the metadata keys that begin with largo- are the
// server's own: a tus creation, or an IETF POST naming its file in
// Upload-Metadata, that sends one is refused with 400 and stores nothing,
// so that no client brings its own owner, condition or protocol.
func TestOwnerServerKeys(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		s, _ := ownerServer(t, g)
		auth := "Authorization: Bearer " + aliceToken
		for _, key := range []string{"largo-if-none-match", "largo-if-match", "largo-owner", "largo-protocol", "largo-ietf-version"} {
			pair := "," + key + " " + b64("user:bob")
			meta := "Upload-Metadata: filename " + b64("in/k.bin") + pair
			if got := curlStatus(t, "-X", "POST", "-H", auth, "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 5", "-H", meta, s.URL+"_largo/uploads/"); got != "400" {
				t.Errorf("tus creation with %s: %s; want 400", key, got)
			}
			meta = "Upload-Metadata: filename " + b64("k.bin") + pair
			if got := curlStatus(t, "-X", "POST", "-H", auth, "-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", "-H", meta,
				"--data-binary", "hello", s.URL+"in/"); got != "400" {
				t.Errorf("IETF POST with %s: %s; want 400", key, got)
			}
		}
		absent(t, g.dir, "in/k.bin")
		g.clean(t)
	})
}

// TestIETFCreationLimits: an IETF creation is held to the limits of a tus
// creation: a length over --max-upload 413, over the free space 507, a
// length that is no length 400, and a completeness that is no Boolean
// 400, with nothing stored (where the draft would have the field
// ignored, and the request stored as a plain PUT).
func TestIETFCreationLimits(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t, "--max-upload", "1MiB")
		auth := "Authorization: Bearer " + testToken
		create := func(url string, fields ...string) string {
			args := []string{"-X", "PUT", "-H", auth, "-H", "Upload-Draft-Interop-Version: 9", "--data-binary", "hello"}
			for _, f := range fields {
				args = append(args, "-H", f)
			}
			return curlStatus(t, append(args, url)...)
		}
		for _, tt := range []struct {
			fields []string
			want   string
		}{
			{[]string{"Upload-Complete: ?0", "Upload-Length: 9000000000000000000"}, "413"},
			{[]string{"Upload-Complete: ?0", "Upload-Length: 2097152"}, "413"},
			{[]string{"Upload-Complete: ?0", "Upload-Length: -1"}, "400"},
			{[]string{"Upload-Complete: ?0", "Upload-Length: ten"}, "400"},
			{[]string{"Upload-Complete: maybe"}, "400"},
			{[]string{"Upload-Complete: true"}, "400"},
		} {
			if got := create(s.URL+"big.bin", tt.fields...); got != tt.want {
				t.Errorf("%v: %s; want %s", tt.fields, got, tt.want)
			}
		}
		absent(t, g.dir, "big.bin")
		if g.srv == nil {
			// A folder tells its free space.
			s := g.serve(t)
			if got := create(s.URL+"big.bin", "Upload-Complete: ?0", "Upload-Length: 9000000000000000000"); got != "507" {
				t.Errorf("a length over the free space: %s; want 507", got)
			}
			absent(t, g.dir, "big.bin")
		}
		g.clean(t)
	})
}

//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/internal/poll"
)

// chainLinks are the links of an attack on a gate that resolves a link's
// ".." against the link's own folder instead of where the link led: d
// leads into /private, and x, dd and key step back from there.
var chainLinks = [][2]string{
	{"pub/d", "../private/inner"},
	{"pub/x", "d/../secret.txt"},
	{"pub/dd", "d/.."},
	{"pub/key", "d/../kk"},
	{"private/kk", "../.largo/share.key"},
}

// TestLinkChains: chains of symbolic links whose ".." steps back from
// where a link led are judged where the kernel takes them, over every
// protocol: a reader of /pub reads nothing of /private through them, a
// writer of /pub writes and removes nothing there, and nobody reads the
// share key; a reader of /private, where links across the tree are
// followed, reads what the kernel reaches.
func TestLinkChains(t *testing.T) {
	for _, mode := range []string{"within", "follow"} {
		t.Run(mode, func(t *testing.T) {
			g := &target{kind: "disk", dir: t.TempDir()}
			g.seed(t, "private/inner/i.txt", "inner secret")
			g.seed(t, "pub/keep.txt", "kept")
			for _, l := range chainLinks {
				if err := os.Symlink(l[1], filepath.Join(g.dir, filepath.FromSlash(l[0]))); err != nil {
					t.Fatal(err)
				}
			}
			s, _ := gateServer(t, g, "--webdav", "--symlinks", mode)
			shareLink(t, g, s, "/pub") // the first link makes the share key
			key, err := os.ReadFile(filepath.Join(g.dir, ".largo", "share.key"))
			if err != nil {
				t.Fatal(err)
			}
			leaks := func(body string) bool {
				return strings.Contains(body, "secret") || strings.Contains(body, string(key))
			}
			for _, who := range [][]string{nil, as(writerToken)} {
				for _, p := range []string{"pub/x", "pub/key", "pub/dd/secret.txt", "pub/dd/kk", "pub/d/i.txt", "pub/dd/inner/i.txt"} {
					if resp, body := send(t, "GET", s.URL+p, nil, 0, who...); resp.StatusCode == 200 || leaks(body) {
						t.Errorf("GET /%s as %v: %d %q", p, who, resp.StatusCode, body)
					}
				}
				for _, p := range []string{"pub/dd/", "pub/dd/?archive=tar", "pub/?archive=tar", "pub/?archive=zip", "pub/dd/SHA256SUMS"} {
					resp, body := send(t, "GET", s.URL+p, nil, 0, append([]string{"Accept", "application/json"}, who...)...)
					if leaks(body) || resp.StatusCode == 200 && strings.HasPrefix(p, "pub/dd/") {
						t.Errorf("GET /%s as %v: %d, showing what the links lead to", p, who, resp.StatusCode)
					}
				}
				resp, body := send(t, "PROPFIND", s.URL+"pub/dd/", nil, 0, append([]string{"Depth", "1"}, who...)...)
				if resp.StatusCode < 300 || strings.Contains(body, "secret.txt") {
					t.Errorf("PROPFIND /pub/dd/ as %v: %d %q", who, resp.StatusCode, body)
				}
				_, body = send(t, "PROPFIND", s.URL+"pub/", nil, 0, append([]string{"Depth", "1"}, who...)...)
				if strings.Contains(body, "secret.txt") {
					t.Errorf("PROPFIND /pub/ as %v lists /private: %q", who, body)
				}
				_, body = send(t, "GET", s.URL+"_largo/search?path=/pub&q=secret", nil, 0, who...)
				if strings.Contains(body, "secret.txt") {
					t.Errorf("a search of /pub as %v finds /private: %q", who, body)
				}
			}
			// The writer of /pub changes nothing in /private through them.
			w := as(writerToken)
			for _, req := range []struct {
				method, path string
				hdr          []string
			}{
				{"PUT", "pub/dd/planted.txt", nil},
				{"PUT", "pub/d/planted.txt", nil},
				{"PUT", "pub/dd/secret.txt", nil},
				{"DELETE", "pub/dd/secret.txt", nil},
				{"DELETE", "pub/dd/inner/", []string{"Depth", "infinity"}},
				{"MKCOL", "pub/dd/made", nil},
				{"COPY", "pub/keep.txt", []string{"Destination", s.URL + "pub/dd/copied.txt"}},
				{"MOVE", "pub/keep.txt", []string{"Destination", s.URL + "pub/dd/moved.txt"}},
				{"MOVE", "pub/dd/secret.txt", []string{"Destination", s.URL + "pub/taken.txt"}},
				{"PROPPATCH", "pub/dd/secret.txt", nil},
			} {
				body := "planted"
				if req.method == "PROPPATCH" {
					body = `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:x"><D:set><D:prop><Z:n>planted</Z:n></D:prop></D:set></D:propertyupdate>`
				}
				resp, text := send(t, req.method, s.URL+req.path, strings.NewReader(body), int64(len(body)), append(append([]string{}, w...), req.hdr...)...)
				if resp.StatusCode < 400 {
					t.Errorf("%s /%s as the writer of /pub: %d %q", req.method, req.path, resp.StatusCode, text)
				}
			}
			for _, name := range []string{"private/planted.txt", "private/inner/planted.txt", "private/made", "private/copied.txt", "private/moved.txt", "pub/taken.txt"} {
				absent(t, g.dir, name)
			}
			for name, want := range map[string]string{"private/secret.txt": "secret", "private/inner/i.txt": "inner secret", "pub/keep.txt": "kept"} {
				if b, err := os.ReadFile(filepath.Join(g.dir, name)); string(b) != want {
					t.Errorf("%s = %q, %v; want %q", name, b, err, want)
				}
			}
			// Alice, who reads /private, reads through x what the kernel
			// reaches where links across the tree are followed; nobody
			// reads the share key.
			resp, body := send(t, "GET", s.URL+"pub/x", nil, 0, as(aliceToken)...)
			if mode == "follow" && (resp.StatusCode != 200 || body != "secret") {
				t.Errorf("alice GET /pub/x under follow: %d %q; want /private/secret.txt", resp.StatusCode, body)
			}
			if mode == "within" && resp.StatusCode == 200 {
				t.Errorf("alice GET /pub/x under within: %d %q", resp.StatusCode, body)
			}
			if _, body := send(t, "GET", s.URL+"pub/key", nil, 0, as(aliceToken)...); strings.Contains(body, string(key)) {
				t.Error("alice read the share key through /pub/key")
			}
		})
	}
}

// TestWriteLandsWhereJudged: a slow PUT into /pub/w/, whose folder is
// replaced by a link into /private (or moved there) while the body
// arrives, stores nothing: not in /private, not in the folder moved
// away, and nothing is left staged.
func TestWriteLandsWhereJudged(t *testing.T) {
	for _, swap := range []string{"link", "moved"} {
		t.Run(swap, func(t *testing.T) {
			g := &target{kind: "disk", dir: t.TempDir()}
			g.seed(t, "pub/w/keep.txt", "kept")
			s, _ := gateServer(t, g)
			const size = 1 << 20
			pr, pw := io.Pipe()
			go func() {
				pw.Write(make([]byte, size/2))
				// Once the server holds some of the bytes, the folder goes.
				if !poll.Until(10*time.Second, 10*time.Millisecond, func() bool { return staged(g.dir) >= size/4 }) {
					pw.CloseWithError(fmt.Errorf("nothing staged"))
					return
				}
				var err error
				switch swap {
				case "link":
					if err = os.Rename(filepath.Join(g.dir, "pub", "w"), filepath.Join(g.dir, "pub", "w-old")); err == nil {
						err = os.Symlink("../private", filepath.Join(g.dir, "pub", "w"))
					}
				case "moved":
					err = os.Rename(filepath.Join(g.dir, "pub", "w"), filepath.Join(g.dir, "private", "w"))
				}
				if err != nil {
					pw.CloseWithError(err)
					return
				}
				pw.Write(make([]byte, size/2))
				pw.Close()
			}()
			resp, body := send(t, "PUT", s.URL+"pub/w/new.bin", pr, size, as(writerToken)...)
			if resp.StatusCode != 409 || !strings.Contains(body, "nothing was stored") {
				t.Errorf("PUT into a folder %s meanwhile: %d %q; want 409", swap, resp.StatusCode, body)
			}
			for _, name := range []string{"private/new.bin", "pub/w-old/new.bin", "private/w/new.bin"} {
				absent(t, g.dir, name)
			}
			if n := staged(g.dir); n > 4096 {
				t.Errorf("a file of %d bytes left staged", n)
			}
			// The same PUT into a folder left alone lands.
			os.MkdirAll(filepath.Join(g.dir, "pub", "v"), 0o755)
			if resp, body := send(t, "PUT", s.URL+"pub/v/new.bin", strings.NewReader("ok"), 2, as(writerToken)...); resp.StatusCode != 201 {
				t.Errorf("PUT into a folder left alone: %d %q", resp.StatusCode, body)
			}
		})
	}
}

// staged returns the size of the largest file of a write in progress in
// dir's state area (the server's own records pass through there too, but
// are small).
func staged(dir string) int {
	ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tmp"))
	n := 0
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			n = max(n, int(fi.Size()))
		}
	}
	return n
}

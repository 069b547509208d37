//go:build e2e

package e2e

import (
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDAVDestinationOwnNames: a COPY or MOVE whose Destination names this
// server by another of its own names (localhost for 127.0.0.1) is a copy
// on this server; another server is 502.
func TestDAVDestinationOwnNames(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "a.txt", "a")
		s := g.serve(t, "--webdav")
		u, _ := url.Parse(s.URL)
		other := "http://localhost:" + u.Port() + "/"
		if resp, body := send(t, "COPY", s.URL+"a.txt", nil, 0, append(bearer, "Destination", other+"b.txt")...); resp.StatusCode != 201 {
			t.Errorf("COPY to localhost's name for this server: %d %s", resp.StatusCode, body)
		}
		if resp, body := send(t, "GET", s.URL+"b.txt", nil, 0); resp.StatusCode != 200 || body != "a" {
			t.Errorf("the copy: %d %q", resp.StatusCode, body)
		}
		if resp, body := send(t, "MOVE", s.URL+"b.txt", nil, 0, append(bearer, "Destination", other+"c.txt")...); resp.StatusCode != 201 {
			t.Errorf("MOVE to localhost's name for this server: %d %s", resp.StatusCode, body)
		}
		for _, dst := range []string{"http://example.com/d.txt", "http://localhost:1/d.txt", strings.Replace(other, "localhost", "127.0.0.2", 1) + "d.txt"} {
			if resp, body := send(t, "COPY", s.URL+"a.txt", nil, 0, append(bearer, "Destination", dst)...); resp.StatusCode != 502 {
				t.Errorf("COPY to %s: %d %s; want 502", dst, resp.StatusCode, body)
			}
		}
	})
}

// TestDAVFolderOntoLastFile: a folder moved or copied with Overwrite
// onto a file that is the only entry of its folder replaces it. On a
// bucket, where a folder is only the prefix of the keys below it, the
// removal of that file takes its folder with it for a moment: the move
// must not then fail as if the folder had never been there, with the
// file already gone.
func TestDAVFolderOntoLastFile(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		for _, method := range []string{"MOVE", "COPY"} {
			g.seed(t, "src-"+method+"/in.txt", "inside")
			g.seed(t, "dst-"+method+"/only.txt", "replaced")
		}
		s := g.serve(t, "--webdav")
		for _, method := range []string{"MOVE", "COPY"} {
			resp, body := send(t, method, s.URL+"src-"+method+"/", nil, 0, append(bearer, "Destination", s.URL+"dst-"+method+"/only.txt", "Overwrite", "T")...)
			if resp.StatusCode != 204 {
				t.Errorf("%s of a folder onto its folder's last file: %d %s; want 204", method, resp.StatusCode, body)
			}
			if resp, body := send(t, "GET", s.URL+"dst-"+method+"/only.txt/in.txt", nil, 0, bearer...); resp.StatusCode != 200 || body != "inside" {
				t.Errorf("after the %s: %d %q", method, resp.StatusCode, body)
			}
		}
	})
}

// TestDAVSourceAndDestinationOverlap: a COPY or MOVE whose source and
// destination hold one another is refused with 403 and changes nothing.
// The library clears the destination before it reads the source, so a
// file copied onto its own folder went with the folder (a 409 after the
// removal); on a folder the same holds where links lead: a file reached
// through a link to its folder, a folder copied below itself through a
// link to it (copied into itself level after level), a link copied onto
// the folder it leads to.
func TestDAVSourceAndDestinationOverlap(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "d/f.txt", "f")
		g.seed(t, "d/sub/g.txt", "g")
		g.seed(t, "e/h.txt", "h")
		cases := [][2]string{
			{"d/f.txt", "d"}, {"d/sub/g.txt", "d"}, {"d/sub", "d"},
			{"d", "d/sub"}, {"d", "d/new"},
		}
		if g.srv == nil {
			if err := os.Symlink("d", filepath.Join(g.dir, "ld")); err != nil {
				t.Fatal(err)
			}
			cases = append(cases, [2]string{"ld/f.txt", "d"}, [2]string{"ld/sub/g.txt", "d"},
				[2]string{"d", "ld/new"}, [2]string{"d", "ld/sub"}, [2]string{"ld", "d"})
		}
		s := g.serve(t, "--webdav")
		before := g.files(t)
		for _, method := range []string{"COPY", "MOVE"} {
			for _, c := range cases {
				for _, overwrite := range []string{"T", ""} {
					hdr := append(bearer, "Destination", s.URL+c[1])
					if overwrite != "" {
						hdr = append(hdr, "Overwrite", overwrite)
					}
					resp, body := send(t, method, s.URL+c[0], nil, 0, hdr...)
					if resp.StatusCode != 403 {
						t.Errorf("%s %s -> %s (Overwrite %q): %d %s; want 403", method, c[0], c[1], overwrite, resp.StatusCode, body)
					}
					if after := g.files(t); !maps.Equal(before, after) {
						t.Fatalf("%s %s -> %s (Overwrite %q) changed the files: %v, now %v", method, c[0], c[1], overwrite, before, after)
					}
				}
			}
		}
		// Beside them, a copy and a move that do not overlap are done.
		if resp, body := send(t, "COPY", s.URL+"d/f.txt", nil, 0, append(bearer, "Destination", s.URL+"e/f.txt")...); resp.StatusCode != 201 {
			t.Errorf("COPY d/f.txt -> e/f.txt: %d %s", resp.StatusCode, body)
		}
		if resp, body := send(t, "MOVE", s.URL+"d/sub", nil, 0, append(bearer, "Destination", s.URL+"e/sub", "Overwrite", "T")...); resp.StatusCode != 201 {
			t.Errorf("MOVE d/sub -> e/sub: %d %s", resp.StatusCode, body)
		}
	})
}

// replaceAccess: bob writes everything; under /q a path quota of 12
// bytes, which its 8 bytes leave 4 of (a replacement is admitted as if
// what it replaces were still there: the quotas count a folder's removal
// at their next pass).
const replaceAccess = `
[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["bob"]
allow = ["all"]

[[quota]]
path = "/q"
bytes = "12"
`

// TestDAVReplaceRefusedKeepsDestination: a COPY or MOVE with Overwrite
// whose copy or rename is refused leaves the destination it would have
// replaced. The library removes the destination first: a file over the
// size limit, or over a path's quota, copied or moved onto a folder, was
// refused (413, 507) with the folder already gone.
func TestDAVReplaceRefusedKeepsDestination(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "big.txt", "0123456789abcdef") // 16 bytes, over the limit
		g.seed(t, "mid.txt", "012345")           // 6: under the limit, over the quota's room
		g.seed(t, "tree/in/big.txt", "0123456789abcdef")
		g.seed(t, "keep/old.txt", "old")
		g.seed(t, "q/y/w.txt", "01234567")
		g.seed(t, "q/z/w.txt", "")
		s := startServerOn(t, g, "--webdav", "--max-upload", "10B", "--access", writeAccessFile(t, replaceAccess))
		bob := []string{"Authorization", tokenOf("bob")}
		before := g.files(t)
		type replacement struct {
			method, src, dst string
			code             int // the refusal's
		}
		refused := []replacement{
			{"COPY", "big.txt", "keep", 413},
			{"COPY", "tree", "keep", 413},
			{"COPY", "mid.txt", "q/z", 507},
			{"MOVE", "mid.txt", "q/z", 507},
		}
		if g.srv != nil {
			// A bucket moves by copies, each a write under the limit.
			refused = append(refused, replacement{"MOVE", "big.txt", "keep", 413})
		}
		for _, c := range refused {
			resp, body := send(t, c.method, s.URL+c.src, nil, 0, append(bob, "Destination", s.URL+c.dst, "Overwrite", "T")...)
			if resp.StatusCode != c.code {
				t.Errorf("%s %s -> %s: %d %s; want %d", c.method, c.src, c.dst, resp.StatusCode, body, c.code)
			}
			if after := g.files(t); !maps.Equal(before, after) {
				t.Fatalf("%s %s -> %s, refused, changed the files: %v, now %v", c.method, c.src, c.dst, before, after)
			}
		}
		// Beside them, a replacement that fits is done.
		if resp, body := send(t, "COPY", s.URL+"mid.txt", nil, 0, append(bob, "Destination", s.URL+"keep", "Overwrite", "T")...); resp.StatusCode != 204 {
			t.Errorf("COPY mid.txt onto keep: %d %s", resp.StatusCode, body)
		}
		if resp, body := send(t, "GET", s.URL+"keep", nil, 0, bob...); resp.StatusCode != 200 || body != "012345" {
			t.Errorf("keep after the copy: %d %q", resp.StatusCode, body)
		}
	})
}

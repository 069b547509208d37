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

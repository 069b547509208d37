//go:build e2e

package e2e

import (
	"net/url"
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

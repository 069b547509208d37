//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"largo/internal/poll"
)

// The gate tests run the real binary against what an attacker tried from
// outside: symbolic links that carry a rule to their target, sidecars
// that leak a hidden file, links that outlive their maker's right, names
// that probe a folder, names that pass for others, a flood of wrong
// passwords. Each fails on a server that decides access at its call
// sites instead of at the store's door.

const writerToken = "writer-token-0123456789"

// gateAccess is an access file: everyone reads and lists, but not
// /private (alice's) nor /docs/NOTES; the writer may write /pub and
// /site, but not /site/index.html.
const gateAccess = `
[[user]]
name = "alice"
tokens = [%q]

[[user]]
name = "writer"
tokens = [%q]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["*"]
allow = []

[[rule]]
path = "/private"
users = ["alice"]
allow = ["all"]

[[rule]]
path = "/docs/NOTES"
users = ["*"]
allow = []

[[rule]]
path = "/pub"
users = ["writer"]
allow = ["all"]

[[rule]]
path = "/site"
users = ["writer"]
allow = ["all"]

[[rule]]
path = "/site/index.html"
users = ["writer"]
allow = ["read", "list"]

[[rule]]
path = "/inbox"
users = ["alice"]
allow = ["all"]
`

// gateServer starts largo on g under gateAccess with the files the tests
// probe, and returns it with the access file's path.
func gateServer(t *testing.T, g *target, extra ...string) (*server, string) {
	t.Helper()
	file := writeAccessFile(t, fmt.Sprintf(gateAccess, aliceToken, writerToken))
	for name, body := range map[string]string{
		"pub/a.txt": "public", "private/secret.txt": "secret", "private/deep/d.txt": "deep",
		"docs/NOTES": "hidden notes", "docs/NOTES.gz": "hidden notes, compressed", "site/index.html": "<p>home</p>",
		"inbox/old.txt": "old",
	} {
		g.seed(t, name, body)
	}
	args := append([]string{"--access", file}, extra...)
	if g.srv == nil {
		return startServer(t, g.dir, args...), file
	}
	return startS3Largo(t, g.srv, "", args...), file
}

func as(token string) []string { return []string{"Authorization", "Bearer " + token} }

// TestSymlinksJudgedWhereTheyLead: a link inside the folder does not
// carry the rule of its own path to its target, and never reaches the
// state area: not for reading, writing, copying, archiving or sharing.
func TestSymlinksJudgedWhereTheyLead(t *testing.T) {
	for _, mode := range []string{"", "--symlinks=follow", "--symlinks=within", "--symlinks=none"} {
		t.Run(strings.TrimPrefix(mode, "--symlinks="), func(t *testing.T) {
			g := &target{kind: "disk", dir: t.TempDir()}
			g.seed(t, "pub/sub/f.txt", "inside")
			for link, to := range map[string]string{"pub/priv": "../private", "pub/state": "../.largo", "pub/here": "sub", "pub/env": "../.env"} {
				if err := os.Symlink(to, filepath.Join(g.dir, filepath.FromSlash(link))); err != nil {
					t.Fatal(err)
				}
			}
			g.seed(t, ".env", "API_KEY=1")
			args := []string{"--webdav"}
			if mode != "" {
				args = append(args, mode)
			}
			s, _ := gateServer(t, g, args...)
			// The share key exists once a link is made.
			shareLink(t, g, s, "/pub")
			if _, err := os.Stat(filepath.Join(g.dir, ".largo", "share.key")); err != nil {
				t.Fatalf("no share key: %v", err)
			}
			for _, tt := range []struct {
				who  []string
				path string
			}{
				{nil, "pub/priv/secret.txt"},
				{as(writerToken), "pub/priv/secret.txt"},
				{nil, "pub/state/share.key"},
				{as(aliceToken), "pub/state/share.key"},
				{nil, "pub/env"},
			} {
				if resp, body := send(t, "GET", s.URL+tt.path, nil, 0, tt.who...); resp.StatusCode == 200 {
					t.Errorf("GET /%s as %v: 200 %q", tt.path, tt.who, body)
				}
			}
			// The writer of /pub cannot write, copy or move into /private.
			if resp, _ := send(t, "PUT", s.URL+"pub/priv/planted.txt", strings.NewReader("x"), 1, as(writerToken)...); resp.StatusCode < 400 {
				t.Errorf("PUT through the link: %d", resp.StatusCode)
			}
			if resp, _ := send(t, "PUT", s.URL+"pub/state/share.key", strings.NewReader(strings.Repeat("k", 32)), 32, as(writerToken)...); resp.StatusCode < 400 {
				t.Errorf("PUT of the share key through the link: %d", resp.StatusCode)
			}
			if resp, _ := send(t, "COPY", s.URL+"pub/a.txt", nil, 0, append(as(writerToken), "Destination", s.URL+"pub/priv/copied.txt")...); resp.StatusCode < 400 {
				t.Errorf("COPY into the link: %d", resp.StatusCode)
			}
			for _, name := range []string{"private/planted.txt", "private/copied.txt"} {
				absent(t, g.dir, name)
			}
			if b, _ := os.ReadFile(filepath.Join(g.dir, ".largo", "share.key")); string(b) == strings.Repeat("k", 32) {
				t.Error("the share key was replaced through a link")
			}
			// Nor put it in an archive, a listing or a share link.
			for _, who := range [][]string{nil, as(writerToken)} {
				_, tar := send(t, "GET", s.URL+"pub/?archive=tar", nil, 0, who...)
				if strings.Contains(tar, "secret") || strings.Contains(tar, "API_KEY") {
					t.Errorf("the archive of /pub as %v holds what the links lead to", who)
				}
				_, list := send(t, "GET", s.URL+"pub/", nil, 0, append([]string{"Accept", "application/json"}, who...)...)
				for _, hidden := range []string{`"priv"`, `"state"`, `"env"`} {
					if strings.Contains(list, hidden) {
						t.Errorf("the listing of /pub as %v shows %s", who, hidden)
					}
				}
			}
			form := url.Values{"path": {"/pub/priv"}, "expires": {"1h"}}.Encode()
			if resp, body := send(t, "POST", s.URL+"_largo/share", strings.NewReader(form), int64(len(form)), append(as(writerToken), "Content-Type", "application/x-www-form-urlencoded")...); resp.StatusCode < 400 {
				t.Errorf("a share link through the link: %d %s", resp.StatusCode, body)
			}
			// A link within its own folder is followed unless none are.
			resp, body := send(t, "GET", s.URL+"pub/here/f.txt", nil, 0)
			if want := mode != "--symlinks=none"; want != (resp.StatusCode == 200) {
				t.Errorf("GET through a link within its folder: %d %q", resp.StatusCode, body)
			}
			// Alice reads /private through the link only where links across
			// the tree are followed.
			resp, _ = send(t, "GET", s.URL+"pub/priv/secret.txt", nil, 0, as(aliceToken)...)
			if want := mode == "--symlinks=follow"; want != (resp.StatusCode == 200) {
				t.Errorf("alice through a link across the tree under %q: %d", mode, resp.StatusCode)
			}
		})
	}
}

// TestSidecarsNeedTheirFile: NAME.gz is NAME's bytes: whoever may not
// read NAME may not read it, whatever NAME's type; whoever may not write
// NAME may not write it.
func TestSidecarsNeedTheirFile(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s, _ := gateServer(t, g, "--sidecars", "any")
		for _, who := range [][]string{nil, as(writerToken)} {
			if resp, body := send(t, "GET", s.URL+"docs/NOTES.gz", nil, 0, who...); resp.StatusCode == 200 {
				t.Errorf("GET the sidecar of a hidden file as %v: 200 %q", who, body)
			}
			_, list := send(t, "GET", s.URL+"docs/", nil, 0, append([]string{"Accept", "application/json"}, who...)...)
			if strings.Contains(list, "NOTES") {
				t.Errorf("the listing shows the hidden file's names: %s", list)
			}
		}
		for _, ext := range []string{".gz", ".br", ".zst"} {
			if resp, _ := send(t, "PUT", s.URL+"site/index.html"+ext, strings.NewReader("x"), 1, as(writerToken)...); resp.StatusCode != 403 {
				t.Errorf("PUT index.html%s by who may not write index.html: %d; want 403", ext, resp.StatusCode)
			}
		}
		if resp, _ := send(t, "PUT", s.URL+"site/other.html.gz", strings.NewReader("x"), 1, as(writerToken)...); resp.StatusCode != 201 {
			t.Errorf("PUT of a sidecar's name beside a file the writer may write: %d", resp.StatusCode)
		}
	})
}

// TestNoOracle: where a client may neither read nor list a folder, a name
// in it answers the same whether or not it exists, and the folder is not
// redirected before the decision.
func TestNoOracle(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s, _ := gateServer(t, g)
		for _, who := range [][]string{nil, as(writerToken)} {
			var answers []string
			for _, path := range []string{"private/secret.txt", "private/missing.txt", "private/deep", "private/nowhere", "private/deep/", "private/nowhere/"} {
				for _, method := range []string{"GET", "HEAD"} {
					resp, body := send(t, method, s.URL+path, nil, 0, who...)
					answers = append(answers, fmt.Sprintf("%d %s", resp.StatusCode, body))
					if resp.StatusCode == 301 || resp.StatusCode == 404 || resp.StatusCode == 200 {
						t.Errorf("%s /%s as %v: %d", method, path, who, resp.StatusCode)
					}
				}
			}
			for i := 2; i < len(answers); i += 2 {
				if answers[i] != answers[0] {
					t.Errorf("as %v the answers differ: %q and %q", who, answers[0], answers[i])
				}
			}
		}
	})
}

// TestLinksAnswerToTheirMaker: a link made on the page grants only what
// its maker may still do: a reload that takes the right away, or a
// revocation, stops it; links are listed and revoked one by one; none
// reaches the server's own routes; their passwords are at least 8
// characters and cannot be guessed without limit.
func TestLinksAnswerToTheirMaker(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s, file := gateServer(t, g)
		mk := func(form url.Values) (int, map[string]any) {
			body := form.Encode()
			resp, text := send(t, "POST", s.URL+"_largo/share", strings.NewReader(body), int64(len(body)), append(as(aliceToken), "Content-Type", "application/x-www-form-urlencoded")...)
			var out map[string]any
			json.Unmarshal([]byte(text), &out)
			return resp.StatusCode, out
		}
		code, folder := mk(url.Values{"path": {"/private"}, "expires": {"1h"}})
		if code != 201 {
			t.Fatalf("alice's link to /private: %d %v", code, folder)
		}
		_, other := mk(url.Values{"path": {"/pub"}, "expires": {"1h"}})
		link := strings.TrimSuffix(s.URL, "/") + folder["url"].(string)
		if resp, body := send(t, "GET", link+"deep/d.txt", nil, 0); resp.StatusCode != 200 || body != "deep" {
			t.Fatalf("the link: %d %q", resp.StatusCode, body)
		}
		if code, _ := mk(url.Values{"path": {"/private"}, "expires": {"1h"}, "password": {"abc"}}); code != 400 {
			t.Errorf("a 3-character link password: %d; want 400", code)
		}
		// Listed, revoked one by one.
		resp, list := send(t, "GET", s.URL+"_largo/links/", nil, 0, as(aliceToken)...)
		if resp.StatusCode != 200 || !strings.Contains(list, folder["id"].(string)) || !strings.Contains(list, other["id"].(string)) {
			t.Errorf("alice's links: %d %s", resp.StatusCode, list)
		}
		if _, list := send(t, "GET", s.URL+"_largo/links/", nil, 0, as(writerToken)...); strings.Contains(list, folder["id"].(string)) {
			t.Errorf("the writer sees alice's links: %s", list)
		}
		if resp, _ := send(t, "DELETE", s.URL+"_largo/links/"+folder["id"].(string), nil, 0, as(writerToken)...); resp.StatusCode != 404 {
			t.Errorf("the writer revokes alice's link: %d; want 404", resp.StatusCode)
		}
		// Alice loses /private: the link loses it too, at once.
		os.WriteFile(file, []byte(strings.Replace(fmt.Sprintf(gateAccess, aliceToken, writerToken),
			"path = \"/private\"\nusers = [\"alice\"]\nallow = [\"all\"]", "path = \"/private\"\nusers = [\"alice\"]\nallow = []", 1)), 0o600)
		s.signal(syscall.SIGHUP)
		poll.Wait(t, 5*time.Second, "the link to stop once its maker lost the right", func() bool {
			resp, _ := send(t, "GET", link+"deep/d.txt", nil, 0)
			return resp.StatusCode == 403
		})
		os.WriteFile(file, []byte(fmt.Sprintf(gateAccess, aliceToken, writerToken)), 0o600)
		s.signal(syscall.SIGHUP)
		poll.Wait(t, 5*time.Second, "the link to work again once its maker has the right back", func() bool {
			resp, _ := send(t, "GET", link+"deep/d.txt", nil, 0)
			return resp.StatusCode == 200
		})
		if resp, _ := send(t, "DELETE", s.URL+"_largo/links/"+folder["id"].(string), nil, 0, as(aliceToken)...); resp.StatusCode != 204 {
			t.Errorf("alice revokes her link: %d", resp.StatusCode)
		}
		if resp, body := send(t, "GET", link+"deep/d.txt", nil, 0); resp.StatusCode != 403 || !strings.Contains(body, "revoked") {
			t.Errorf("a revoked link: %d %q", resp.StatusCode, body)
		}
		if resp, _ := send(t, "GET", strings.TrimSuffix(s.URL, "/")+other["url"].(string)+"a.txt", nil, 0); resp.StatusCode != 200 {
			t.Errorf("her other link after the revocation: %d", resp.StatusCode)
		}
		// A link to the root reaches files, never the server's routes.
		root := shareLink(t, g, s, "/", "--expires", "1h")
		for _, route := range []string{"_largo/metrics", "_largo/healthz", "_largo/links/"} {
			if resp, body := send(t, "GET", root+route, nil, 0); resp.StatusCode != 404 {
				t.Errorf("GET %s through a root link: %d %q", route, resp.StatusCode, body)
			}
		}
		// A password link: guessing meets the limiter.
		code, pw := mk(url.Values{"path": {"/private"}, "expires": {"1h"}, "password": {"a long password"}})
		if code != 201 {
			t.Fatalf("a password link: %d", code)
		}
		plink := strings.TrimSuffix(s.URL, "/") + pw["url"].(string) + "secret.txt"
		if resp, body := send(t, "GET", plink, nil, 0); resp.StatusCode != 401 || !strings.Contains(body, "password") {
			t.Errorf("a password link without it: %d %q", resp.StatusCode, body)
		}
		statuses := map[int]int{}
		for i := range 15 {
			resp, _ := send(t, "GET", plink, nil, 0, "Authorization", "Basic "+basic("x", fmt.Sprintf("guess-%d", i)))
			statuses[resp.StatusCode]++
		}
		if statuses[429] == 0 {
			t.Errorf("15 wrong link passwords: %v; want 429 after the budget", statuses)
		}
	})
}

// TestWrongPasswordsBounded: 30 wrong passwords at once for one user
// cost at most the client's budget of hashes; the rest are refused at
// once.
func TestWrongPasswordsBounded(t *testing.T) {
	dir := t.TempDir()
	hash := passwdHash(t, "the right one")
	file := writeAccessFile(t, fmt.Sprintf("[[user]]\nname = \"carol\"\npassword = %q\n\n[[rule]]\npath = \"/\"\nusers = [\"carol\"]\nallow = [\"all\"]\n", hash))
	s := startServer(t, dir, "--access", file)
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			resp, _ := send(t, "GET", s.URL, nil, 0, "Authorization", "Basic "+basic("carol", "wrong"))
			mu.Lock()
			got[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[401] > 10 || got[401]+got[429]+got[503] != 30 {
		t.Errorf("30 wrong passwords at once: %v; want at most 10 checked (401), the rest 429 or 503", got)
	}
}

// passwdHash runs largo passwd.
func passwdHash(t *testing.T, password string) string {
	t.Helper()
	cmd := exec.Command(largoBin, "passwd")
	cmd.Stdin = strings.NewReader(password + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("largo passwd: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestNamesThatPassForOthers: writes refuse names with bidirectional or
// invisible characters and trailing dots or spaces, with the reason.
func TestNamesThatPassForOthers(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t)
		for _, name := range []string{"evil\u202etxt.exe", "zero\u200bwidth.txt", "c1\u0085.txt", "dot.", "space ", "d./x.txt", "bom\ufeff.txt"} {
			resp, body := send(t, "PUT", s.URL+(&url.URL{Path: name}).EscapedPath(), strings.NewReader("x"), 1, bearer...)
			if resp.StatusCode != 400 || !strings.Contains(body, "name") {
				t.Errorf("PUT %q: %d %q; want 400 with the reason", name, resp.StatusCode, body)
			}
		}
		if resp, _ := send(t, "PUT", s.URL+"caf%C3%A9.txt", strings.NewReader("x"), 1, bearer...); resp.StatusCode != 201 {
			t.Errorf("PUT of an honest accented name: %d", resp.StatusCode)
		}
	})
}

// TestAdminListenerHosts: the admin listener answers only its own names,
// and its cmdline shows no token.
func TestAdminListenerHosts(t *testing.T) {
	admin := freeAddr(t)
	startServer(t, t.TempDir(), "--admin-listen", admin, "--upload", "--token", testToken)
	for host, code := range map[string]int{"": 200, "attacker.example": 421, "attacker.example:80": 421} {
		req, _ := http.NewRequest("GET", "http://"+admin+"/debug/pprof/cmdline", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4096)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("admin cmdline with Host %q: %d; want %d", host, resp.StatusCode, code)
		}
		if strings.Contains(string(b[:n]), testToken) {
			t.Errorf("admin cmdline shows the token: %q", b[:n])
		}
	}
}

// TestStateIsPrivate: the share key and the state folder are the
// server's alone.
func TestStateIsPrivate(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".largo"), 0o755) // as an older version made it
	s := startServer(t, dir, "--upload", "--token", testToken)
	mode := func(name string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: %v; want %v", name, got, want)
		}
	}
	mode(".largo", 0o700)                                 // closed at start-up
	shareLink(t, &target{kind: "disk", dir: dir}, s, "/") // the first link makes the share key
	mode(".largo/share.key", 0o600)
}

// TestStartUpSaysWhatIsOn: with an access file, the log says who may
// write where, and warns of a file without rules.
func TestStartUpSaysWhatIsOn(t *testing.T) {
	s, _ := gateServer(t, &target{kind: "disk", dir: t.TempDir()})
	// The log is written off the requests' path: it may come after the
	// ready line.
	poll.Wait(t, 5*time.Second, "the start-up log to say who writes where", func() bool {
		log := s.stderr.String()
		return strings.Contains(log, "writes on") && strings.Contains(log, "/pub: writer")
	})
	file := writeAccessFile(t, "[[user]]\nname = \"dave\"\ntokens = [\"dave-token-0123456789\"]\n")
	s2 := startServer(t, t.TempDir(), "--access", file)
	poll.Wait(t, 5*time.Second, "a warning of an access file without rules", func() bool {
		log := s2.stderr.String()
		return strings.Contains(log, "no rule") && strings.Contains(log, "writes off")
	})
}

// TestPropfindIsARead: who may only write a folder learns nothing of
// what is in it by PROPFIND: neither a file's size and dates nor the
// folder's entries.
func TestPropfindIsARead(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s, _ := accessServer(t, g, "--webdav")
		bot := []string{"Authorization", "Bearer " + botToken, "Depth", "0"}
		for _, path := range []string{"inbox/old.txt", "inbox/", "inbox/missing.txt"} {
			resp, body := send(t, "PROPFIND", s.URL+path, nil, 0, bot...)
			if resp.StatusCode != 403 || strings.Contains(body, "getcontentlength") {
				t.Errorf("PROPFIND /%s by who may only write there: %d %s", path, resp.StatusCode, body)
			}
		}
		if resp, _ := send(t, "PUT", s.URL+"inbox/new.txt", strings.NewReader("n"), 1, "Authorization", "Bearer "+botToken); resp.StatusCode != 201 {
			t.Errorf("the writer's PUT: %d", resp.StatusCode)
		}
	})
}

// TestDropBoxCapped: a write through a drop box stores at most the
// server's cap for links, or the link's own when smaller: refused before
// the body when it says more, cut when it sends more; nothing is left.
func TestDropBoxCapped(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "inbox/old.txt", "o")
		s := g.serve(t, "--link-max-upload", "4KiB")
		drop := shareLink(t, g, s, "/inbox", "--write", "--expires", "1h")
		small := shareLink(t, g, s, "/inbox", "--write", "--expires", "1h", "--max-upload", "1KiB")
		big := strings.Repeat("x", 8<<10)
		for _, tt := range []struct {
			link, name string
			size       int64 // -1: chunked
			body       string
			code       int
		}{
			{drop, "ok.bin", 3 << 10, big[:3<<10], 201},
			{drop, "announced.bin", int64(len(big)), big, 413},
			{drop, "chunked.bin", -1, big, 413},
			{small, "small-ok.bin", 512, big[:512], 201},
			{small, "small-over.bin", 2 << 10, big[:2<<10], 413},
		} {
			resp, body := send(t, "PUT", tt.link+tt.name, strings.NewReader(tt.body), tt.size)
			if resp.StatusCode != tt.code {
				t.Errorf("PUT %s of %d bytes: %d %s; want %d", tt.name, len(tt.body), resp.StatusCode, body, tt.code)
			}
			if tt.code != 201 {
				absent(t, g.dir, "inbox/"+tt.name)
			}
		}
		g.clean(t)
		// The owner of the server is not capped by the links' cap.
		if resp, _ := send(t, "PUT", s.URL+"inbox/mine.bin", strings.NewReader(big), int64(len(big)), bearer...); resp.StatusCode != 201 {
			t.Errorf("the token's PUT over the links' cap: %d", resp.StatusCode)
		}
	})
}

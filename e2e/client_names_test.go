//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// oddNames are file names that a URL must escape, each in its own way.
var oddNames = []string{"100%.txt", "a%2Fb.txt", "%41.txt", "q?.txt", "h#.txt", "s p.txt", "é.txt", "+;=,@$&.txt", "50%/x%2e%2e.txt", "sp ace/ü#?.bin"}

// TestGetTreeOddNames downloads, with `largo get -r` from `largo serve`, a
// folder whose names hold %, #, ?, spaces and non-ASCII letters: every file
// arrives under its own name with its own bytes, nothing else is left in
// the target folder, and curl fetches the same bytes at the escaped URL.
func TestGetTreeOddNames(t *testing.T) {
	root := t.TempDir()
	want := map[string]string{}
	for i, name := range oddNames {
		want[name] = writeRandom(t, filepath.Join(root, "d", filepath.FromSlash(name)), int64(1000+i*37), uint64(70+i))
	}
	s := startServer(t, root)
	out := filepath.Join(t.TempDir(), "out")
	for _, seg := range []string{"1", "4"} {
		os.RemoveAll(out)
		code, stderr := runClient(t, t.TempDir(), "get", "-r", s.URL+"d/", "-o", out, "-j", seg)
		if code != 0 {
			t.Fatalf("-j %s: exit %d: %s", seg, code, stderr)
		}
		var found []string
		filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(out, p)
				found = append(found, filepath.ToSlash(rel))
			}
			return nil
		})
		if len(found) != len(want) {
			t.Errorf("-j %s: the target folder holds %q; want the %d files alone", seg, found, len(want))
		}
		for name, sum := range want {
			if got := fileSHA(t, filepath.Join(out, filepath.FromSlash(name))); got != sum {
				t.Errorf("-j %s: %s: wrong bytes", seg, name)
			}
		}
	}
	curl := need(t, "curl")
	for _, name := range []string{"100%.txt", "a%2Fb.txt", "sp ace/ü#?.bin"} {
		var esc []string
		for _, elem := range strings.Split(name, "/") {
			esc = append(esc, url.PathEscape(elem))
		}
		b, err := exec.Command(curl, "-sSf", "--path-as-is", s.URL+"d/"+strings.Join(esc, "/")).Output()
		if err != nil || sha256Hex(b) != want[name] {
			t.Errorf("curl %s: %v, sha match %v", name, err, sha256Hex(b) == want[name])
		}
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sha256B64(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// lyingListing serves a JSON listing at / whose sizes (and digests) need
// not be those of the files it serves.
type lyingFile struct {
	body   string
	listed int64
	digest string // Repr-Digest, if any
}

func lyingListing(t *testing.T, files map[string]lyingFile) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			type entry struct {
				Name string `json:"name"`
				Size int64  `json:"size"`
			}
			var l struct {
				Entries []entry `json:"entries"`
			}
			for name, f := range files {
				l.Entries = append(l.Entries, entry{name, f.listed})
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(l)
			return
		}
		f, ok := files[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if f.digest != "" {
			w.Header().Set("Repr-Digest", f.digest)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(f.body)))
		io.WriteString(w, f.body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestGetTreeWrongBytes runs `largo get -r` against a listing whose files
// disagree with it: a size other than the listed one, a digest that does
// not match, names no local file may have. The run fails (exit 1) saying
// why for each, keeps none of them at their names (no file, part file or
// state; the bytes that disagree with their digest are kept aside as
// NAME.bad) and writes nothing outside its folder; the good file arrives.
func TestGetTreeWrongBytes(t *testing.T) {
	srv := lyingListing(t, map[string]lyingFile{
		"longer.txt":  {body: "twenty bytes of text", listed: 10},
		"shorter.txt": {body: "five!", listed: 10},
		"digest.txt":  {body: "right size", listed: 10, digest: "sha-256=:" + sha256B64("other text") + ":"},
		"good.txt":    {body: "just right", listed: 10, digest: "sha-256=:" + sha256B64("just right") + ":"},
		"../up.txt":   {body: "x", listed: 1},
		"a/b.txt":     {body: "x", listed: 1},
		"..":          {body: "x", listed: 1},
		"":            {body: "x", listed: 1},
	})
	base := t.TempDir()
	out := filepath.Join(base, "out")
	code, stderr := runClient(t, t.TempDir(), "get", "-r", srv, "-o", out)
	if code != 1 {
		t.Fatalf("exit %d; want 1: %s", code, stderr)
	}
	for _, why := range []string{"longer.txt: the server sends 20 bytes, not the size the folder listing gives (10)",
		"shorter.txt: the server sends 5 bytes", "digest.txt: digest mismatch", `"../up.txt"`, `"a/b.txt"`, "a dot name", "an empty name", "7 of 8 files failed"} {
		if !strings.Contains(stderr, why) {
			t.Errorf("stderr does not say %q:\n%s", why, stderr)
		}
	}
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"digest.txt.bad", "good.txt"}) {
		t.Errorf("the target folder holds %q; want digest.txt.bad and good.txt", names)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "digest.txt.bad")); string(b) != "right size" {
		t.Errorf("digest.txt.bad holds %q; want the bytes received", b)
	}
	if _, err := os.Stat(filepath.Join(base, "up.txt")); err == nil {
		t.Error("a name climbed out of the target folder")
	}
}

// holdingProxy forwards to a server and, once armed, holds the next
// transfer through it after n body bytes (a GET's answer, an upload's
// request body) until its client goes away: a stop at a known point, for
// a client interrupted mid-way.
type holdingProxy struct {
	URL string

	mu     sync.Mutex
	n      int64         // armed: hold after this many bytes; 0: pass everything
	holdAt chan struct{} // closed once a transfer is held
}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{}
	rp := &httputil.ReverseProxy{FlushInterval: -1}
	rp.Rewrite = func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host // the server's links lead back through the proxy
		r := pr.Out
		if r.Body != nil && r.ContentLength != 0 && (r.Method == http.MethodPatch || r.Method == http.MethodPut || r.Method == http.MethodPost) {
			r.Body = p.wrap(r.Context(), r.Body)
		}
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet && resp.StatusCode/100 == 2 {
			resp.Body = p.wrap(resp.Request.Context(), resp.Body)
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.URL = srv.URL + "/"
	return p
}

// arm makes the next transfer hold after n bytes (0: none); the channel
// closes when it does.
func (p *holdingProxy) arm(n int64) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.holdAt = n, make(chan struct{})
	return p.holdAt
}

// wrap returns body as is, or, when armed, a reader that holds after the
// armed count (and disarms the proxy).
func (p *holdingProxy) wrap(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return body
	}
	h := &holdingBody{ReadCloser: body, ctx: ctx, left: p.n, held: p.holdAt}
	p.n = 0
	return h
}

type holdingBody struct {
	io.ReadCloser
	ctx  context.Context
	left int64
	held chan struct{}
}

func (h *holdingBody) Read(b []byte) (int, error) {
	if h.left <= 0 {
		close(h.held)
		<-h.ctx.Done()
		return 0, h.ctx.Err()
	}
	if int64(len(b)) > h.left {
		b = b[:h.left]
	}
	n, err := h.ReadCloser.Read(b)
	h.left -= int64(n)
	return n, err
}

// interruptedRun runs largo with args and env in dir, through a proxy
// armed to hold after n bytes; once held, and once took reports that the
// client took what it was sent, it sends SIGINT and returns the resume
// command printed (exit 3 is required).
func interruptedRun(t *testing.T, p *holdingProxy, n int64, took func() bool, dir string, env []string, args ...string) (resume, stderr string) {
	t.Helper()
	held := p.arm(n)
	defer p.arm(0)
	c := &clientRun{cmd: exec.Command(largoBin, args...), stderr: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd.Dir, c.cmd.Env, c.cmd.Stderr = dir, env, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.cmd.Process.Kill(); <-c.done })
	select {
	case <-held:
	case <-c.done:
		t.Fatalf("largo %v ended before the proxy held it:\n%s", args, c.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("largo %v: the proxy held nothing in 60s:\n%s", args, c.stderr.String())
	}
	if !waitForFast(60*time.Second, c.done, took) {
		t.Fatalf("largo %v: ended, or took nothing of what it was sent in 60s:\n%s", args, c.stderr.String())
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	code := c.wait(t, 30*time.Second)
	stderr = c.stderr.String()
	_, resume, ok := strings.Cut(stderr, "to resume, run again: ")
	resume, _, _ = strings.Cut(resume, "\n")
	if code != 3 || !ok || resume == "" {
		t.Fatalf("largo %v after SIGINT: exit %d; want 3 and a resume command:\n%s", args, code, stderr)
	}
	return resume, stderr
}

// shellRun runs a printed command line with sh in dir, with the largo
// under test first on PATH, and returns its exit code and stderr.
func shellRun(t *testing.T, line, dir string, env []string) (int, string) {
	t.Helper()
	cmd := exec.Command(need(t, "sh"), "-c", line)
	cmd.Dir = dir
	cmd.Env = slices.Concat(env, []string{"PATH=" + filepath.Dir(largoBin) + string(os.PathListSeparator) + os.Getenv("PATH")})
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running after 120s:\n%s", line, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// cleanEnv is the environment of a client run: this process's without
// any LARGO_ variable or PATH, plus add.
func cleanEnv(add ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LARGO_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}

// tokenWay is one way a token reaches get and put, and what the printed
// resume command must then say in its place.
type tokenWay struct {
	name     string
	args     []string // flags of the first run
	env      []string // environment of the first run and of the resume
	shows    string   // what the resume command must hold
	tokenArg bool     // the token was typed: the resume command repeats it
}

// tokenWays are the ways token can be given.
func tokenWays(t *testing.T, token string) []tokenWay {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []tokenWay{
		{"--token", []string{"--token", token}, nil, "--token " + token, true},
		{"LARGO_TOKEN", nil, []string{"LARGO_TOKEN=" + token}, `LARGO_TOKEN="$LARGO_TOKEN"`, false},
		{"--token-file", []string{"--token-file", file}, nil, "--token-file " + file, false},
		{"LARGO_TOKEN_FILE", nil, []string{"LARGO_TOKEN_FILE=" + file}, "--token-file " + file, false},
	}
}

const resumeToken = "resume-token-0123456789abcdef"

// TestGetResumeCommandToken interrupts `largo get` from a server whose
// files need a token, given in each way a token can be: the command it
// prints resumes the download (run by sh as printed), names a token from
// the environment or a file without printing it, and the command without
// the token fails with a 401 that says to give it.
func TestGetResumeCommandToken(t *testing.T) {
	root := t.TempDir()
	const size = 8 << 20
	want := writeRandom(t, filepath.Join(root, "big.bin"), size, 80)
	access := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(access, []byte(`[[user]]
name = "bot"
tokens = ["`+resumeToken+`"]

[[rule]]
path = "/"
users = ["bot"]
allow = ["read", "list"]
`), 0o600)
	s := startServer(t, root, "--access", access)
	p := newHoldingProxy(t, s.URL)
	for _, way := range tokenWays(t, resumeToken) {
		t.Run(way.name, func(t *testing.T) {
			dir := t.TempDir()
			env := cleanEnv(way.env...)
			// One stream: the proxy holds one connection.
			args := append([]string{"get", p.URL + "big.bin", "-o", "big.bin", "-j", "1"}, way.args...)
			// The part file holds bytes: the client took the answer.
			took := func() bool {
				fi, err := os.Stat(filepath.Join(dir, "big.bin.part"))
				return err == nil && fi.Size() > 0
			}
			resume, stderr := interruptedRun(t, p, 1<<20, took, dir, env, args...)
			if !strings.Contains(resume, way.shows) || !way.tokenArg && strings.Contains(stderr, resumeToken) {
				t.Fatalf("resume command %q; want it to hold %q and no token it was not given:\n%s", resume, way.shows, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "big.bin.part.json")); err != nil {
				t.Fatalf("no resume state after the stop: %v\n%s", err, stderr)
			}
			// Without the token: a 401 that says what to do, state kept.
			bare := strings.Join([]string{"largo", "get", p.URL + "big.bin", "-o", "big.bin", "-j", "1"}, " ")
			code, out := shellRun(t, bare, dir, cleanEnv())
			if code != 1 || !strings.Contains(out, "401") || !strings.Contains(out, "the server wants a sign-in") ||
				!strings.Contains(out, "--token") || strings.Contains(out, "will not help") {
				t.Fatalf("without the token: exit %d: %s", code, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "big.bin.part.json")); err != nil {
				t.Fatalf("a refused token lost the resume state: %v", err)
			}
			code, out = shellRun(t, resume, dir, env)
			if code != 0 || !strings.Contains(out, "resumed") || fileSHA(t, filepath.Join(dir, "big.bin")) != want {
				t.Fatalf("%s: exit %d: %s", resume, code, out)
			}
		})
	}
}

// TestPutResumeCommandToken does the same with `largo put` (tus) into a
// server that takes uploads with a token.
func TestPutResumeCommandToken(t *testing.T) {
	root := t.TempDir()
	s := startServer(t, root, "--upload", "--token", resumeToken)
	p := newHoldingProxy(t, s.URL)
	const size = 8 << 20
	for i, way := range tokenWays(t, resumeToken) {
		t.Run(way.name, func(t *testing.T) {
			dir := t.TempDir()
			name := "up" + strconv.Itoa(i) + ".bin"
			want := writeRandom(t, filepath.Join(dir, name), size, uint64(90+i))
			env := cleanEnv(append([]string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}, way.env...)...)
			args := append([]string{"put", name, p.URL}, way.args...)
			// The proxy held the body of a PATCH: the upload was created,
			// and its URL remembered, before it.
			took := func() bool { return true }
			resume, stderr := interruptedRun(t, p, 1<<20, took, dir, env, args...)
			if !strings.Contains(resume, way.shows) || !way.tokenArg && strings.Contains(stderr, resumeToken) {
				t.Fatalf("resume command %q; want it to hold %q and no token it was not given:\n%s", resume, way.shows, stderr)
			}
			code, out := shellRun(t, resume, dir, env)
			if code != 0 || !strings.Contains(out, "resumed") {
				t.Fatalf("%s: exit %d: %s", resume, code, out)
			}
			if got := fileSHA(t, filepath.Join(root, name)); got != want {
				t.Fatalf("stored sha %s; want %s", got, want)
			}
		})
	}
	// Without the token: a 401 that says what to do.
	dir := t.TempDir()
	writeRandom(t, filepath.Join(dir, "bare.bin"), 1<<20, 99)
	code, out := shellRun(t, "largo put bare.bin "+p.URL, dir, cleanEnv("XDG_CACHE_HOME="+filepath.Join(dir, "cache")))
	if code != 1 || !strings.Contains(out, "401") || !strings.Contains(out, "the server wants a sign-in") ||
		!strings.Contains(out, "--token") || strings.Contains(out, "will not help") {
		t.Fatalf("without the token: exit %d: %s", code, out)
	}
}

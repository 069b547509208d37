//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"largo/hooks"
)

// hookSecret signs the hooks' requests in these tests.
const hookSecret = "e2e-hook-secret-0123456789"

// hookEvent is a notification as a receiver reads it (docs/hooks.md).
type hookEvent struct {
	ID        string            `json:"id"`
	Type      string            `json:"type"`
	Time      time.Time         `json:"time"`
	Name      string            `json:"name"`
	From      string            `json:"from"`
	Folder    bool              `json:"folder"`
	Size      int64             `json:"size"`
	ETag      string            `json:"etag"`
	SHA256    string            `json:"sha256"`
	Protocol  string            `json:"protocol"`
	Principal string            `json:"principal"`
	Metadata  map[string]string `json:"metadata"`
}

// hookReceiver is a real HTTP server on 127.0.0.1 that takes
// notifications and answers the pre-upload hook; it can be down (its
// port closed) and up again on the same port.
type hookReceiver struct {
	t    *testing.T
	addr string

	mu     sync.Mutex
	srv    *http.Server
	events []hookEvent // every notification received, duplicates too
	bodies map[string]string
	bad    []string // what was wrong with a request
	asked  []map[string]any
	// refused counts the notifications answered 400: those of names
	// beginning with poison-, until poisonOK.
	refused  map[string]int
	poisonOK bool
}

func newHookReceiver(t *testing.T) *hookReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &hookReceiver{t: t, addr: ln.Addr().String(), bodies: map[string]string{}}
	rc.serve(ln)
	t.Cleanup(rc.down)
	return rc
}

func (rc *hookReceiver) URL(p string) string { return "http://" + rc.addr + p }

func (rc *hookReceiver) serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /notify", rc.notify)
	mux.HandleFunc("POST /pre-upload", rc.preUpload)
	srv := &http.Server{Handler: mux}
	rc.mu.Lock()
	rc.srv = srv
	rc.mu.Unlock()
	go srv.Serve(ln)
}

// down closes the receiver's port: connections to it are refused.
func (rc *hookReceiver) down() {
	rc.mu.Lock()
	srv := rc.srv
	rc.srv = nil
	rc.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// up listens on the receiver's port again.
func (rc *hookReceiver) up() {
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ln, err = net.Listen("tcp", rc.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		rc.t.Fatalf("the receiver cannot listen on %s again: %v", rc.addr, err)
	}
	rc.serve(ln)
}

func (rc *hookReceiver) check(r *http.Request, body []byte) {
	if err := hooks.Verify([]byte(hookSecret), r.Header, body, time.Now(), 0); err != nil {
		rc.bad = append(rc.bad, fmt.Sprintf("%v: %s", err, body))
	}
	// The signature of the body alone, kept one release for receivers
	// that check it.
	if !hooks.VerifyLegacy([]byte(hookSecret), body, r.Header.Get(hooks.LegacySignatureHeader)) {
		rc.bad = append(rc.bad, "bad legacy signature on "+string(body))
	}
}

func (rc *hookReceiver) notify(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.check(r, body)
	var e hookEvent
	if err := json.Unmarshal(body, &e); err != nil {
		rc.bad = append(rc.bad, "not JSON: "+string(body))
	}
	if strings.HasPrefix(path.Base(e.Name), "poison-") && !rc.poisonOK {
		if rc.refused == nil {
			rc.refused = map[string]int{}
		}
		rc.refused[e.Name]++
		http.Error(w, "cannot handle this one", http.StatusBadRequest)
		return
	}
	if r.Header.Get(hooks.EventIDHeader) != e.ID || r.Header.Get(hooks.IDHeader) != e.ID || e.ID == "" {
		rc.bad = append(rc.bad, "event id field "+r.Header.Get(hooks.EventIDHeader)+" for "+e.ID)
	}
	if prev, ok := rc.bodies[e.ID]; ok && prev != string(body) {
		rc.bad = append(rc.bad, "a duplicate of "+e.ID+" with another body")
	}
	rc.bodies[e.ID] = string(body)
	rc.events = append(rc.events, e)
}

// preUpload answers the pre-upload hook by the name: refuse-* is
// refused with 403 and a message, meta-* accepted with metadata, slow-*
// answered too late, anything else accepted.
func (rc *hookReceiver) preUpload(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	json.Unmarshal(body, &req)
	rc.mu.Lock()
	rc.check(r, body)
	rc.asked = append(rc.asked, req)
	rc.mu.Unlock()
	name, _ := req["name"].(string)
	base := name[strings.LastIndex(name, "/")+1:]
	switch {
	case strings.HasPrefix(base, "refuse-"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"message":"refused by policy: %s"}`, base)
	case strings.HasPrefix(base, "meta-"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"metadata":{"project":"p1","by":"%v"}}`, req["protocol"])
	case strings.HasPrefix(base, "slow-"):
		time.Sleep(3 * time.Second)
	}
}

// received returns the notifications received so far.
func (rc *hookReceiver) received() []hookEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookEvent(nil), rc.events...)
}

// problems returns what was wrong with the requests received.
func (rc *hookReceiver) problems() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bad...)
}

// waitEvents waits until cond holds of the events received.
func (rc *hookReceiver) waitEvents(t *testing.T, timeout time.Duration, what string, cond func([]hookEvent) bool) []hookEvent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		evs := rc.received()
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still waiting for %s; received %d events: %+v", timeout, what, len(evs), evs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hookSecretFile writes the secret to a file for --hook-secret-file.
func hookSecretFile(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "hook.secret")
	if err := os.WriteFile(p, []byte(hookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// hookSend makes a request with the test token and returns its status and
// body.
func hookSend(t *testing.T, method, u string, body io.Reader, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// uploadVia uploads content to name through protocol (put, form, tus,
// ietf) and returns the status and body of the answer that accepts or
// refuses it.
func uploadVia(t *testing.T, s *server, protocol, name, content string) (int, string) {
	t.Helper()
	switch protocol {
	case "put":
		return hookSend(t, "PUT", s.URL+name, strings.NewReader(content))
	case "form":
		dir, base := "", name
		if i := strings.LastIndex(name, "/"); i >= 0 {
			dir, base = name[:i+1], name[i+1:]
		}
		req, err := formRequest(s.URL+dir, base, strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	case "tus":
		meta := "filename " + base64.StdEncoding.EncodeToString([]byte(name)) + ",filetype " + base64.StdEncoding.EncodeToString([]byte("text/plain"))
		code, body := hookSend(t, "POST", s.URL+"_largo/uploads/", strings.NewReader(content),
			"Tus-Resumable", "1.0.0", "Upload-Length", fmt.Sprint(len(content)), "Upload-Metadata", meta,
			"Content-Type", "application/offset+octet-stream")
		return code, body
	case "ietf":
		return hookSend(t, "PUT", s.URL+name, strings.NewReader(content), "Upload-Draft-Interop-Version", "9", "Upload-Complete", "?1")
	}
	t.Fatalf("no protocol %s", protocol)
	return 0, ""
}

var hookProtocols = []string{"put", "form", "tus", "ietf"}

// TestHooksPreUpload: the pre-upload hook is asked on every write
// protocol, on a folder and on a bucket; its refusal's status and
// message reach the client and nothing is stored; the metadata it
// answers comes back in the committed event; a hook too slow or down
// refuses the upload with 503. Deletions and moves (a rename on a
// folder, copies on a bucket) are notified as one event each.
func TestHooksPreUpload(t *testing.T) { forEachTarget(t, hooksPreUpload) }

func hooksPreUpload(t *testing.T, g *target) {
	rc := newHookReceiver(t)
	s := g.serve(t, "--webdav", "--hook-pre-upload", rc.URL("/pre-upload"), "--hook-notify", rc.URL("/notify"),
		"--hook-secret-file", hookSecretFile(t), "--hook-timeout", "1s")

	for _, p := range hookProtocols {
		t.Run("refused/"+p, func(t *testing.T) {
			name := "in/refuse-" + p + ".txt"
			code, body := uploadVia(t, s, p, name, "hello")
			if code != http.StatusForbidden || !strings.Contains(body, "refused by policy: refuse-"+p+".txt") {
				t.Errorf("%s: %d %q; want 403 with the hook's message", p, code, body)
			}
			if code := get(t, s.URL+name).StatusCode; code != http.StatusNotFound {
				t.Errorf("%s: the refused file answers %d; want 404", p, code)
			}
		})
	}
	contents := map[string]string{}
	for _, p := range hookProtocols {
		name := "in/meta-" + p + ".txt"
		contents[name] = "content of " + p
		if code, body := uploadVia(t, s, p, name, contents[name]); code >= 300 {
			t.Fatalf("%s: upload answered %d %q", p, code, body)
		}
	}
	// A WebDAV COPY makes a file: the hook is asked too.
	if code, body := hookSend(t, "COPY", s.URL+"in/meta-put.txt", nil, "Destination", s.URL+"in/refuse-copy.txt"); code != http.StatusForbidden || !strings.Contains(body, "refused by policy") {
		t.Errorf("COPY to a refused name: %d %q; want 403 with the hook's message", code, body)
	}
	if code, _ := hookSend(t, "COPY", s.URL+"in/meta-put.txt", nil, "Destination", s.URL+"in/meta-copy.txt"); code != http.StatusCreated {
		t.Errorf("COPY: %d", code)
	}
	contents["in/meta-copy.txt"] = contents["in/meta-put.txt"]
	evs := rc.waitEvents(t, 20*time.Second, "a committed event per upload", func(evs []hookEvent) bool {
		return len(eventsOf(evs, "committed")) == len(contents)
	})
	for name, c := range contents {
		e := eventsOf(evs, "committed")[name]
		sum := sha256.Sum256([]byte(c))
		want := strings.TrimSuffix(strings.TrimPrefix(name, "in/meta-"), ".txt")
		proto := want
		if want == "copy" {
			proto = "webdav"
		}
		if e.Size != int64(len(c)) || e.SHA256 != hex.EncodeToString(sum[:]) || e.Protocol != proto || e.ETag == "" || e.Principal == "" {
			t.Errorf("%s: committed event %+v", name, e)
		}
		if e.Metadata["project"] != "p1" || e.Metadata["by"] != proto {
			t.Errorf("%s: metadata %v; want the hook's answer", name, e.Metadata)
		}
	}
	rc.mu.Lock()
	var tusAsked map[string]any
	for _, a := range rc.asked {
		if a["name"] == "in/meta-tus.txt" {
			tusAsked = a
		}
	}
	rc.mu.Unlock()
	if m, _ := tusAsked["metadata"].(map[string]any); m["filetype"] != "text/plain" || tusAsked["size"] != float64(len(contents["in/meta-tus.txt"])) {
		t.Errorf("the hook was asked %v of a tus upload; want its size and client metadata", tusAsked)
	}

	t.Run("slow hook", func(t *testing.T) {
		for _, p := range []string{"put", "tus"} {
			if code, body := uploadVia(t, s, p, "slow-"+p+".txt", "x"); code != http.StatusServiceUnavailable {
				t.Errorf("%s: %d %q; want 503", p, code, body)
			}
		}
	})
	t.Run("hook down", func(t *testing.T) {
		down, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		downURL := "http://" + down.Addr().String() + "/"
		down.Close()
		var s2 *server
		if g.srv == nil { // a second server on the same folder
			s2 = startServer(t, g.dir, "--upload", "--token", testToken, "--hook-pre-upload", downURL)
		} else {
			s2 = startS3Largo(t, g.srv, "", "--upload", "--token", testToken, "--hook-pre-upload", downURL)
		}
		for _, p := range hookProtocols {
			if code, body := uploadVia(t, s2, p, "down-"+p+".txt", "x"); code != http.StatusServiceUnavailable || !strings.Contains(body, "upload hook unavailable") {
				t.Errorf("%s: %d %q; want 503", p, code, body)
			}
		}
	})

	// Removals and moves.
	n := len(rc.received())
	if code, _ := hookSend(t, "DELETE", s.URL+"in/meta-form.txt", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := hookSend(t, "MOVE", s.URL+"in/meta-tus.txt", nil, "Destination", s.URL+"in/moved-tus.txt"); code != http.StatusCreated {
		t.Fatalf("MOVE: %d", code)
	}
	form := url.Values{"from": {"/in"}, "to": {"/out"}}
	if code, body := hookSend(t, "POST", s.URL+"_largo/move", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded"); code >= 300 {
		t.Fatalf("move of a folder: %d %q", code, body)
	}
	rc.waitEvents(t, 20*time.Second, "deleted and moved events", func(evs []hookEvent) bool { return len(evs) >= n+3 })
	time.Sleep(500 * time.Millisecond) // room for any event that should not come
	evs = rc.received()[n:]
	if len(evs) != 3 {
		t.Fatalf("%d events for a deletion and two moves; want 3: %+v", len(evs), evs)
	}
	if e := evs[0]; e.Type != "deleted" || e.Name != "in/meta-form.txt" || e.Size != int64(len(contents["in/meta-form.txt"])) {
		t.Errorf("deleted event %+v", e)
	}
	if e := evs[1]; e.Type != "moved" || e.From != "in/meta-tus.txt" || e.Name != "in/moved-tus.txt" || e.Folder || e.Size != int64(len(contents["in/meta-tus.txt"])) {
		t.Errorf("moved event of a file %+v", e)
	}
	if e := evs[2]; e.Type != "moved" || e.From != "in" || e.Name != "out" || !e.Folder {
		t.Errorf("moved event of a folder %+v", e)
	}

	// A parallel upload (tus concatenation, largo put -j): asked once, of
	// its final upload, with the whole size.
	src := filepath.Join(t.TempDir(), "big.bin")
	sum := writeRandom(t, src, 64<<20, 7)
	env := []string{"LARGO_TOKEN=" + testToken}
	if code, _, stderr := runLargo(t, env, "put", "-q", "-j", "4", src, s.URL+"par/refuse-big.bin"); code == 0 || !strings.Contains(stderr, "refused by policy: refuse-big.bin") {
		t.Errorf("a refused parallel upload: exit %d, %q; want a failure with the hook's message", code, stderr)
	}
	n = len(rc.received())
	if code, _, stderr := runLargo(t, env, "put", "-q", "-j", "4", src, s.URL+"par/meta-big.bin"); code != 0 {
		t.Fatalf("a parallel upload: exit %d, %s", code, stderr)
	}
	evs = rc.waitEvents(t, 20*time.Second, "the parallel upload's event", func(evs []hookEvent) bool { return len(evs) > n })
	if e := evs[n]; e.Type != "committed" || e.Name != "par/meta-big.bin" || e.Size != 64<<20 || e.SHA256 != sum || e.Metadata["by"] != "tus" {
		t.Errorf("the parallel upload's event %+v", e)
	}
	rc.mu.Lock()
	var bigAsked []any
	for _, a := range rc.asked {
		if strings.HasPrefix(a["name"].(string), "par/") {
			bigAsked = append(bigAsked, a["size"])
		}
	}
	rc.mu.Unlock()
	if fmt.Sprint(bigAsked) != fmt.Sprint([]any{float64(64 << 20), float64(64 << 20)}) {
		t.Errorf("the hook was asked of sizes %v for two parallel uploads; want once each, the whole size", bigAsked)
	}
	if p := rc.problems(); len(p) > 0 {
		t.Errorf("requests with problems: %q", p)
	}
}

// eventsOf returns the last event of type typ for each name.
func eventsOf(evs []hookEvent, typ string) map[string]hookEvent {
	m := map[string]hookEvent{}
	for _, e := range evs {
		if e.Type == typ {
			m[e.Name] = e
		}
	}
	return m
}

// TestHooksOutage: a notification receiver that is down for 30 s while
// 100 files are uploaded (a few of them deleted or moved afterwards),
// with the server stopped (SIGTERM) and started again on the same folder
// or bucket halfway, then back, receives the event of every change, in
// the order they were made, each signed, duplicates (if any) with the
// same id and body.
func TestHooksOutage(t *testing.T) { forEachTargetAtOnce(t, hooksOutage) }

func hooksOutage(t *testing.T, g *target) {
	const uploads, downFor = 100, 30 * time.Second
	rc := newHookReceiver(t)
	rc.down()
	wentDown := time.Now()
	args := []string{"--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t), "--hook-retry-max", "2s"}
	s := g.serve(t, args...)
	var want []string // "type name", in the order of the changes
	sums, sizes := map[string]string{}, map[string]int64{}
	restarted := 0 // the changes made before the second server
	for i := range uploads {
		if i == uploads/2 {
			// Stopped and started again: what the first server queued
			// is sent by the second.
			s.signal(syscall.SIGTERM)
			if code := s.wait(30 * time.Second); code != 0 {
				t.Fatalf("largo exited with %d on SIGTERM", code)
			}
			s = g.serve(t, args...)
			restarted = len(want)
		}
		name := fmt.Sprintf("up/%03d.bin", i)
		content := bytes.Repeat([]byte{byte(i)}, 1000+i)
		if code, body := hookSend(t, "PUT", s.URL+name, bytes.NewReader(content)); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %q", name, code, body)
		}
		sum := sha256.Sum256(content)
		want, sums[name], sizes[name] = append(want, "committed "+name), hex.EncodeToString(sum[:]), int64(len(content))
		switch {
		case i%20 == 19: // some removed
			if code, body := hookSend(t, "DELETE", s.URL+name, nil); code != http.StatusNoContent {
				t.Fatalf("DELETE %s: %d %q", name, code, body)
			}
			want = append(want, "deleted "+name)
		case i%25 == 24: // some moved
			to := fmt.Sprintf("up/moved-%03d.bin", i)
			form := url.Values{"from": {"/" + name}, "to": {"/" + to}}
			if code, body := hookSend(t, "POST", s.URL+"_largo/move", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded"); code >= 300 {
				t.Fatalf("move of %s: %d %q", name, code, body)
			}
			want = append(want, "moved "+to+" from "+name)
		}
	}
	if n := len(rc.received()); n != 0 {
		t.Fatalf("%d events received while the receiver was down", n)
	}
	time.Sleep(time.Until(wentDown.Add(downFor)))
	rc.up()
	back := time.Now()
	evs := rc.waitEvents(t, 60*time.Second, "the event of every change", func(evs []hookEvent) bool {
		ids := map[string]bool{}
		for _, e := range evs {
			ids[e.ID] = true
		}
		return len(ids) >= len(want)
	})
	t.Logf("every event received %.1fs after the receiver came back (%d requests for %d events)", time.Since(back).Seconds(), len(evs), len(want))
	// In the order of the changes: the first arrival of each id.
	seen := map[string]bool{}
	var got []string
	for _, e := range evs {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		line := e.Type + " " + e.Name
		if e.From != "" {
			line += " from " + e.From
		}
		got = append(got, line)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events received, in order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range eventsOf(evs, "committed") {
		if e.SHA256 != sums[e.Name] || e.Size != sizes[e.Name] || e.Protocol != "put" {
			t.Errorf("%s: sha256 %s, %d bytes, protocol %q; want %s, %d, put", e.Name, e.SHA256, e.Size, e.Protocol, sums[e.Name], sizes[e.Name])
		}
	}
	// The second server sent them all: what it queued and what the first
	// one left. (It counts a delivery, and empties the outbox, just after
	// the receiver's answer: the figures are polled.)
	waitMetrics(t, s, 10*time.Second,
		fmt.Sprintf(`largo_hook_events_total{stage="queued"} %d`, len(want)-restarted),
		fmt.Sprintf(`largo_hook_events_total{stage="delivered"} %d`, len(want)),
		`largo_hook_outbox_depth 0`)
	if p := rc.problems(); len(p) > 0 {
		t.Errorf("requests with problems: %q", p)
	}
}

// TestHooksTwoServers: two servers on one folder or bucket, each queuing
// the events of the uploads it takes into the one outbox while the
// receiver is down; once it is back, one of them at a time sends, so
// every event arrives once, in the order of the uploads.
func TestHooksTwoServers(t *testing.T) { forEachTarget(t, hooksTwoServers) }

func hooksTwoServers(t *testing.T, g *target) {
	const uploads = 20
	rc := newHookReceiver(t)
	rc.down() // both servers queue, and both would send once it is back
	args := []string{"--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t), "--hook-retry-max", "1s"}
	servers := []*server{g.serve(t, args...), g.serve(t, args...)}
	var names []string
	for i := range uploads {
		name := fmt.Sprintf("two/%02d.txt", i)
		if code, body := hookSend(t, "PUT", servers[i%2].URL+name, strings.NewReader(name)); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %q", name, code, body)
		}
		names = append(names, name)
	}
	time.Sleep(2 * time.Second) // a few failed attempts
	rc.up()
	rc.waitEvents(t, 30*time.Second, "every upload's event", func(evs []hookEvent) bool {
		return len(eventsOf(evs, "committed")) == uploads
	})
	// With the receiver up, the servers still take turns: the sender,
	// having seen the other's events, reads the outbox at each send
	// rather than sending its own from memory, so the order holds.
	for i := range uploads {
		name := fmt.Sprintf("two/up-%02d.txt", i)
		if code, body := hookSend(t, "PUT", servers[i%2].URL+name, strings.NewReader(name)); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %q", name, code, body)
		}
		names = append(names, name)
	}
	rc.waitEvents(t, 30*time.Second, "every upload's event", func(evs []hookEvent) bool {
		return len(eventsOf(evs, "committed")) == len(names)
	})
	time.Sleep(time.Second) // room for a duplicate that should not come
	evs := rc.received()
	if len(evs) != len(names) {
		t.Errorf("%d requests for %d events: a record sent by both servers", len(evs), len(names))
	}
	for i := range min(len(evs), len(names)) {
		if evs[i].Name != names[i] {
			t.Errorf("event %d is of %s; want %s (the order of the uploads)", i, evs[i].Name, names[i])
			break
		}
	}
	if p := rc.problems(); len(p) > 0 {
		t.Errorf("requests with problems: %q", p)
	}
}

// TestHooksRestartSends: a server stopped with SIGTERM gives up its lease
// on the outbox, so that the server started after it sends at once, not
// once the lease has run out (15 s).
func TestHooksRestartSends(t *testing.T) { forEachTarget(t, hooksRestartSends) }

func hooksRestartSends(t *testing.T, g *target) {
	rc := newHookReceiver(t)
	args := []string{"--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t)}
	s := g.serve(t, args...)
	if code, _ := hookSend(t, "PUT", s.URL+"first.txt", strings.NewReader("1")); code != http.StatusCreated {
		t.Fatalf("PUT: %d", code)
	}
	rc.waitEvents(t, 10*time.Second, "the first event", func(evs []hookEvent) bool { return len(evs) == 1 })
	s.signal(syscall.SIGTERM)
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("largo exited with %d on SIGTERM", code)
	}
	s = g.serve(t, args...)
	start := time.Now()
	if code, _ := hookSend(t, "PUT", s.URL+"second.txt", strings.NewReader("2")); code != http.StatusCreated {
		t.Fatalf("PUT: %d", code)
	}
	rc.waitEvents(t, 20*time.Second, "the second event", func(evs []hookEvent) bool {
		return eventsOf(evs, "committed")["second.txt"].ID != ""
	})
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the second server sent its first event after %s: it waited for the first one's lease", took.Round(time.Millisecond))
	}
}

// TestHooksExpired: a file the expiry sweep removes is told to the
// receiver as an expired event, after its committed one; a file that
// does not expire is not.
func TestHooksExpired(t *testing.T) { forEachTarget(t, hooksExpired) }

func hooksExpired(t *testing.T, g *target) {
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(expiryAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	rc := newHookReceiver(t)
	args := []string{"--access", access, "--expiry-sweep", "300ms", "--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t)}
	var s *server
	if g.srv == nil {
		s = startServer(t, g.dir, args...)
	} else {
		s = startS3Largo(t, g.srv, "", args...)
	}
	for _, name := range []string{"tmp/gone.txt", "other/stays.txt"} {
		if code, _ := hookSend(t, "PUT", s.URL+name, strings.NewReader("bytes of "+name)); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d", name, code)
		}
	}
	evs := rc.waitEvents(t, 30*time.Second, "the expired event", func(evs []hookEvent) bool {
		return eventsOf(evs, "expired")["tmp/gone.txt"].ID != ""
	})
	exp, com := eventsOf(evs, "expired")["tmp/gone.txt"], eventsOf(evs, "committed")["tmp/gone.txt"]
	if com.ID == "" || exp.ETag != com.ETag || exp.Size != int64(len("bytes of tmp/gone.txt")) || !exp.Time.After(com.Time) {
		t.Errorf("expired event %+v; committed %+v", exp, com)
	}
	if _, ok := eventsOf(evs, "expired")["other/stays.txt"]; ok {
		t.Errorf("an expired event of a file no rule expires: %+v", evs)
	}
	if code, _ := hookSend(t, "GET", s.URL+"tmp/gone.txt", nil); code != http.StatusNotFound {
		t.Errorf("GET of the expired file: %d", code)
	}
	if p := rc.problems(); len(p) != 0 {
		t.Errorf("receiver saw: %v", p)
	}
}

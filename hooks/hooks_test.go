package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"largo"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/wire"
)

var secret = []byte("0123456789abcdef0123")

func newState(t *testing.T) largo.State {
	t.Helper()
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.State()
}

func TestAdmit(t *testing.T) {
	var (
		mu     sync.Mutex
		got    uploadRequest
		sigOK  bool
		answer func(w http.ResponseWriter, r *http.Request)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sigOK = Verify(secret, r.Header, b, time.Now(), 0) == nil && VerifyLegacy(secret, b, r.Header.Get(LegacySignatureHeader))
		got = uploadRequest{}
		json.Unmarshal(b, &got)
		a := answer
		mu.Unlock()
		a(w, r)
	}))
	defer srv.Close()
	h, err := New(Config{PreUpload: srv.URL, Secret: secret, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := gate.With(context.Background(), gate.User("alice"))
	up := ingest.Upload{Name: "a/b.txt", Size: 5, Protocol: "put", Metadata: map[string]string{"filetype": "text/plain"}}
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		code   int
		reason string
		meta   map[string]string
	}{
		{"accept, no body", func(w http.ResponseWriter, r *http.Request) {}, 0, "", nil},
		{"accept with metadata", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"metadata":{"project":"x1"}}`)
		}, 0, "", map[string]string{"project": "x1"}},
		{"refuse, JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"message":"no .txt here"}`)
		}, 403, "no .txt here", nil},
		{"refuse, text", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "quota of project x1 reached\nsecond line", http.StatusRequestEntityTooLarge)
		}, 413, "quota of project x1 reached", nil},
		{"refuse, empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusConflict) }, 409, "upload refused: conflict", nil},
		{"hook fails", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, 502, "", nil},
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/x", http.StatusFound) }, 502, "", nil},
		{"bad metadata", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"metadata":{"a b":"x"}}`)
		}, 502, "", nil},
		{"too slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(400 * time.Millisecond) }, 503, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			answer = c.answer
			mu.Unlock()
			meta, err := h.Admit(ctx, up)
			mu.Lock()
			defer mu.Unlock()
			if !sigOK {
				t.Error("the request's signature does not verify")
			}
			if got.Name != "a/b.txt" || got.Size != 5 || got.User != "alice" || got.Principal != "user:alice" || got.Protocol != "put" || got.Metadata["filetype"] != "text/plain" {
				t.Errorf("request %+v", got)
			}
			if c.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(meta) != len(c.meta) || meta["project"] != c.meta["project"] {
					t.Errorf("metadata %v, want %v", meta, c.meta)
				}
				return
			}
			code, reason := wire.Status(err)
			if code != c.code || (c.reason != "" && reason != c.reason) {
				t.Errorf("refusal %d %q, want %d %q", code, reason, c.code, c.reason)
			}
		})
	}
}

func TestAdmitDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nobody answers there
	for _, open := range []bool{false, true} {
		h, err := New(Config{PreUpload: srv.URL, FailOpen: open})
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Admit(context.Background(), ingest.Upload{Name: "x", Size: -1})
		code, _ := wire.Status(err)
		if open && err != nil || !open && code != http.StatusServiceUnavailable {
			t.Errorf("fail open %v: %v (%d)", open, err, code)
		}
	}
}

// receiver is a notification receiver that can be down.
type receiver struct {
	mu   sync.Mutex
	down bool
	got  []event
	bad  int // bodies whose signature did not verify
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if Verify(secret, r.Header, b, time.Now(), 0) != nil || !VerifyLegacy(secret, b, r.Header.Get(LegacySignatureHeader)) {
		rc.bad++
	}
	var e event
	json.Unmarshal(b, &e)
	if r.Header.Get(EventIDHeader) != e.ID || r.Header.Get(IDHeader) != e.ID || r.Header.Get(EventTypeHeader) != e.Type {
		rc.bad++
	}
	rc.got = append(rc.got, e)
}

func (rc *receiver) events() []event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]event(nil), rc.got...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOutbox(t *testing.T) {
	rc := &receiver{down: true}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := newState(t)
	cfg := Config{Notify: srv.URL, Secret: secret, State: st, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Poll: 20 * time.Millisecond}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(gate.With(context.Background(), gate.LinkHolder("L1")))
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	names := []string{"a", "b", "c", "d", "e"}
	for _, n := range names {
		h.Notify(ctx, ingest.Event{Type: ingest.EventCommitted, Name: n, Info: largo.Info{Size: 3, ETag: `"e"`}, SHA256: []byte{1, 2}})
	}
	h.Notify(ctx, ingest.Event{Type: ingest.EventMoved, Name: "f", From: "a", Info: largo.Info{IsDir: true}})
	time.Sleep(100 * time.Millisecond) // a few failed attempts
	// A server stopped and started again keeps what was queued.
	cancel()
	<-done
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go h2.Run(ctx)
	rc.mu.Lock()
	rc.down = false
	rc.mu.Unlock()
	waitFor(t, "six events", func() bool { return len(rc.events()) >= 6 })
	got := rc.events()
	if rc.bad != 0 {
		t.Errorf("%d requests with a bad signature or fields", rc.bad)
	}
	for i, n := range append(names, "f") {
		if got[i].Name != n {
			t.Errorf("event %d is %q, want %q (out of order)", i, got[i].Name, n)
		}
	}
	e := got[0]
	if e.Type != "committed" || e.Size != 3 || e.ETag != `"e"` || e.SHA256 != "0102" || e.Link != "L1" || len(e.ID) != 32 {
		t.Errorf("committed event %+v", e)
	}
	if m := got[5]; m.Type != "moved" || m.From != "a" || !m.Folder {
		t.Errorf("moved event %+v", m)
	}
	waitFor(t, "an empty outbox", func() bool {
		for range st.List(context.Background(), outboxPrefix) {
			return false
		}
		return true
	})
}

// TestLease: of two senders on one outbox, one sends; the other takes
// over when the first stops.
func TestLease(t *testing.T) {
	st := newState(t)
	now := time.Now()
	clock := func() time.Time { return now }
	a, _ := New(Config{Notify: "http://127.0.0.1:1/", State: st, Lease: time.Minute, Now: clock})
	b, _ := New(Config{Notify: "http://127.0.0.1:1/", State: st, Lease: time.Minute, Now: clock})
	ctx := context.Background()
	holds := func(h *Hooks) bool { return h.hold(ctx, true) == nil }
	if !holds(a) {
		t.Fatal("a did not take a free lease")
	}
	if holds(b) {
		t.Fatal("b took a's lease")
	}
	now = now.Add(45 * time.Second)
	if !holds(a) || holds(b) {
		t.Fatal("a did not keep its lease, or b took it")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !holds(b) {
		t.Fatal("b did not take the lease a gave up")
	}
	now = now.Add(2 * time.Minute)
	if !holds(a) {
		t.Fatal("a did not take the lease b let expire")
	}
	b.Close(ctx)
	a.Close(ctx)
}

// TestCloseReleases: a sender stopped gives its lease up with Close,
// and the next sender takes the outbox at once.
func TestCloseReleases(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := newState(t)
	cfg := Config{Notify: srv.URL, Secret: secret, State: st, Lease: time.Hour}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	h.Notify(ctx, ingest.Event{Type: ingest.EventCommitted, Name: "a"})
	waitFor(t, "the event", func() bool { return len(rc.events()) == 1 })
	cancel()
	<-done
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(context.Background(), leaseKey); !errors.Is(err, largo.ErrNotFound) {
		t.Fatalf("the lease record after Close: %v; want none", err)
	}
	next, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := next.hold(context.Background(), true); err != nil {
		t.Fatalf("the next sender did not take the outbox at once: %v", err)
	}
	next.Close(context.Background())
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []Config{{PreUpload: "ftp://x"}, {Notify: "http://127.0.0.1:1/"}, {Notify: "/relative", State: newState(t)}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

// TestDuplicate: a receiver that takes an event but answers too late gets
// it again, byte for byte, with the same id.
func TestDuplicate(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		first := len(bodies) == 1
		mu.Unlock()
		if first {
			time.Sleep(300 * time.Millisecond) // past the timeout: not taken
		}
	}))
	defer srv.Close()
	h, err := New(Config{Notify: srv.URL, State: newState(t), Timeout: 100 * time.Millisecond, MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	h.Notify(ctx, ingest.Event{Type: ingest.EventDeleted, Name: "x"})
	waitFor(t, "a second delivery", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if bodies[0] != bodies[1] {
		t.Errorf("a retry sent other bytes:\n%s\n%s", bodies[0], bodies[1])
	}
}

// FuzzCleanMessage: a refusal's message, whatever the hook answered, is
// one bounded line without control characters.
func FuzzCleanMessage(f *testing.F) {
	f.Add("quota reached")
	f.Add("a\nb\r\x00c")
	f.Add(strings.Repeat("é", 1000))
	f.Fuzz(func(t *testing.T, s string) {
		m := cleanMessage(s)
		if utf8.RuneCountInString(m) > maxMessage {
			t.Errorf("%d characters", utf8.RuneCountInString(m))
		}
		for _, r := range m {
			if unicode.IsControl(r) {
				t.Errorf("control character %U in %q", r, m)
			}
		}
		if m != strings.TrimSpace(m) {
			t.Errorf("untrimmed %q", m)
		}
	})
}

// TestOutboxForeignRecord: a record that is no notification is removed,
// and holds back none after it.
func TestOutboxForeignRecord(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := newState(t)
	if err := st.Put(context.Background(), outboxPrefix+"0000000000000000-junk", []byte("not JSON")); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Notify: srv.URL, Secret: secret, State: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	h.Notify(ctx, ingest.Event{Type: ingest.EventCommitted, Name: "after"})
	waitFor(t, "the event after the foreign record", func() bool { return len(rc.events()) == 1 })
	if _, err := st.Get(context.Background(), outboxPrefix+"0000000000000000-junk"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("the foreign record is still there: %v", err)
	}
}

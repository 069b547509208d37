package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/ingest"
	"largo/internal/poll"
)

// counter is an Observer that counts.
type counter struct {
	mu     sync.Mutex
	events map[string]int
	depth  int
	dead   int
}

func (c *counter) HookEvent(stage string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.events == nil {
		c.events = map[string]int{}
	}
	c.events[stage]++
}
func (c *counter) HookOutbox(n int) { c.mu.Lock(); c.depth = n; c.mu.Unlock() }
func (c *counter) HookDead(n int)   { c.mu.Lock(); c.dead = n; c.mu.Unlock() }
func (c *counter) HookAdmit(string) {}

func (c *counter) stage(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events[s]
}

func (c *counter) deadLetters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// answering is a receiver whose answer to each event answer decides (a
// status; 0 for 204).
type answering struct {
	mu     sync.Mutex
	answer func(e event) int
	got    []event // the events taken
	tries  map[string]int
}

func (a *answering) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var e event
	json.Unmarshal(b, &e)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tries == nil {
		a.tries = map[string]int{}
	}
	a.tries[e.Name]++
	code := 0
	if a.answer != nil {
		code = a.answer(e)
	}
	if code != 0 {
		w.WriteHeader(code)
		return
	}
	a.got = append(a.got, e)
	w.WriteHeader(http.StatusNoContent)
}

func (a *answering) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.got {
		out = append(out, e.Name)
	}
	return out
}

func (a *answering) setAnswer(f func(e event) int) {
	a.mu.Lock()
	a.answer = f
	a.mu.Unlock()
}

// run runs h's sender until the test ends.
func run(t *testing.T, h *Hooks) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		h.Close(context.Background())
	})
}

// records counts the records under prefix in st, and their bytes.
func records(t *testing.T, st largo.State, prefix string) (int, int) {
	t.Helper()
	n, size := 0, 0
	for rec, err := range st.List(context.Background(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		b, err := st.Get(context.Background(), rec.Key)
		if err != nil {
			t.Fatal(err)
		}
		n, size = n+1, size+len(b)
	}
	return n, size
}

func notify(h *Hooks, name string) {
	h.Notify(context.Background(), ingest.Event{Type: ingest.EventCommitted, Name: name, Info: largo.Info{Size: 1}})
}

// lines is a slog handler that keeps the messages logged.
type lines struct {
	mu  sync.Mutex
	msg []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msg = append(l.msg, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

func (l *lines) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msg {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// TestOutboxBound: 10,000 events queued while the receiver is down leave
// the outbox within its bound, by count and by bytes; the rest are
// dropped, counted, with one log line; once the receiver is back, the
// events kept are delivered in order, and the outbox takes events again.
func TestOutboxBound(t *testing.T) {
	const events = 10_000
	for _, c := range []struct {
		name      string
		maxEvents int
		maxBytes  int64
	}{{"count", 1000, 0}, {"bytes", 0, 64 << 10}} {
		t.Run(c.name, func(t *testing.T) {
			rc := &answering{answer: func(event) int { return http.StatusServiceUnavailable }}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			st := newState(t)
			obs, logged := &counter{}, &lines{}
			h, err := New(Config{Notify: srv.URL, Secret: secret, State: st, MaxEvents: c.maxEvents, MaxBytes: c.maxBytes,
				MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Poll: 20 * time.Millisecond,
				Observer: obs, Logger: slog.New(logged)})
			if err != nil {
				t.Fatal(err)
			}
			run(t, h)
			var names []string
			for i := range events {
				name := fmt.Sprintf("f%05d", i)
				notify(h, name)
				names = append(names, name)
			}
			n, size := records(t, st, outboxPrefix)
			queued, dropped := obs.stage("queued"), obs.stage("dropped")
			t.Logf("%d events kept (%d bytes), %d dropped", n, size, dropped)
			if c.maxEvents > 0 && n > c.maxEvents || c.maxBytes > 0 && int64(size) > c.maxBytes {
				t.Errorf("the outbox holds %d events of %d bytes; bound %d events, %d bytes", n, size, c.maxEvents, c.maxBytes)
			}
			if queued != n || queued+dropped != events || dropped == 0 {
				t.Errorf("%d queued and %d dropped of %d; %d in the outbox", queued, dropped, events, n)
			}
			// A line when drops begin, not one per drop (a count may
			// find room for a few more in between).
			if l := logged.count("the notifications' outbox is full"); l < 1 || l > 5 {
				t.Errorf("%d log lines of a full outbox; want one for each run of drops", l)
			}
			rc.setAnswer(nil) // back
			poll.Wait(t, 30*time.Second, "the events kept delivered", func() bool { return len(rc.names()) >= queued })
			got := rc.names()
			if len(got) != queued || !slices.IsSorted(got) || got[0] != names[0] {
				t.Errorf("delivered %d events of %d kept, from %s, sorted %v; want them all, in order", len(got), queued, got[0], slices.IsSorted(got))
			}
			poll.Wait(t, 10*time.Second, "an outbox with room", func() bool {
				notify(h, "after")
				return obs.stage("queued") > queued
			})
			if l := logged.count("the notifications' outbox has room again"); l != logged.count("the notifications' outbox is full") {
				t.Errorf("%d log lines of an outbox with room again; want one for each run of drops", l)
			}
		})
	}
}

// TestOutboxPoison: an event the receiver refuses for ever (400) is
// parked as a dead letter after Config.MaxRefusals tries, and the events
// after it are delivered, in order; the dead letter is listed, counted,
// and can be retried (then delivered) or dropped.
func TestOutboxPoison(t *testing.T) {
	rc := &answering{}
	poison := func(e event) int {
		if strings.HasPrefix(e.Name, "poison") {
			return http.StatusBadRequest
		}
		return 0
	}
	rc.setAnswer(poison)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := newState(t)
	obs := &counter{}
	h, err := New(Config{Notify: srv.URL, Secret: secret, State: st, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	run(t, h)
	for _, n := range []string{"a", "poison", "b", "c", "poison2", "d"} {
		notify(h, n)
	}
	poll.Wait(t, 20*time.Second, "the events after the poison ones", func() bool { return len(rc.names()) == 4 })
	if got := strings.Join(rc.names(), ","); got != "a,b,c,d" {
		t.Errorf("delivered %s; want a,b,c,d", got)
	}
	rc.mu.Lock()
	tries := rc.tries["poison"]
	rc.mu.Unlock()
	if tries != DefaultMaxRefusals {
		t.Errorf("the poison event was tried %d times; want %d", tries, DefaultMaxRefusals)
	}
	poll.Wait(t, 5*time.Second, "two dead letters counted", func() bool { return obs.stage("parked") == 2 && obs.deadLetters() == 2 })
	if n, _ := records(t, st, outboxPrefix); n != 0 {
		t.Errorf("%d records left in the outbox", n)
	}

	dl := NewDeadLetters(st)
	var dead []DeadLetter
	if err := dl.Each(context.Background(), func(d DeadLetter, err error) bool {
		if err != nil {
			t.Error(err)
		}
		dead = append(dead, d)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 || dead[0].Name != "poison" || dead[1].Name != "poison2" {
		t.Fatalf("dead letters %+v", dead)
	}
	if d := dead[0]; d.Status != http.StatusBadRequest || d.Tries != DefaultMaxRefusals || d.Type != "committed" || len(d.ID) != 32 || !bytes.Contains(d.Body, []byte(d.ID)) || !strings.Contains(d.Reason, "400") {
		t.Errorf("dead letter %+v", d)
	}

	if _, err := dl.Retry(context.Background(), []string{"nosuchid"}, false); !errors.Is(err, ErrNoDeadLetter) {
		t.Errorf("retry of an unknown id: %v", err)
	}
	rc.setAnswer(nil) // the receiver was fixed
	if n, err := dl.Retry(context.Background(), []string{dead[0].ID}, false); n != 1 || err != nil {
		t.Fatalf("retry: %d, %v", n, err)
	}
	poll.Wait(t, 20*time.Second, "the retried event", func() bool { return len(rc.names()) == 5 })
	if got := rc.names()[4]; got != "poison" {
		t.Errorf("delivered %s; want the retried event", got)
	}
	if n, err := dl.Drop(context.Background(), nil, true); n != 1 || err != nil {
		t.Errorf("drop of all: %d, %v", n, err)
	}
	if n, _ := records(t, st, deadPrefix); n != 0 {
		t.Errorf("%d dead letters left", n)
	}
}

// TestOutboxMaxAge: an event the receiver keeps failing (500) is parked
// once older than Config.MaxAge; the next one flows.
func TestOutboxMaxAge(t *testing.T) {
	rc := &answering{answer: func(e event) int {
		if e.Name == "broken" {
			return http.StatusInternalServerError
		}
		return 0
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := newState(t)
	h, err := New(Config{Notify: srv.URL, State: st, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxAge: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, h)
	notify(h, "broken")
	notify(h, "next")
	poll.Wait(t, 20*time.Second, "the next event", func() bool { return len(rc.names()) == 1 })
	rc.mu.Lock()
	tries := rc.tries["broken"]
	rc.mu.Unlock()
	if n, _ := records(t, st, deadPrefix); n != 1 || tries < 2 {
		t.Errorf("%d dead letters after %d tries; want the broken event, tried more than once", n, tries)
	}
}

// TestBackoff: the waits between attempts are random (full jitter), below
// a ceiling doubling from MinBackoff up to MaxBackoff.
func TestBackoff(t *testing.T) {
	h, err := New(Config{MinBackoff: time.Second, MaxBackoff: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for failures, ceiling := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 10: 8 * time.Second, 100: 8 * time.Second} {
		seen := map[time.Duration]bool{}
		for range 100 {
			d := h.backoff(failures)
			if d <= 0 || d > ceiling+time.Millisecond {
				t.Errorf("after %d failures: %s; want within (0, %s]", failures, d, ceiling)
			}
			seen[d] = true
		}
		if len(seen) < 50 {
			t.Errorf("after %d failures: %d distinct waits of 100: no jitter", failures, len(seen))
		}
	}
}

// countingState counts the calls made to a state, by kind and prefix.
type countingState struct {
	largo.State
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingState) note(what, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasPrefix(key, outboxPrefix) {
		what += " outbox"
	}
	c.calls[what]++
}

func (c *countingState) Get(ctx context.Context, key string) ([]byte, error) {
	c.note("get", key)
	return c.State.Get(ctx, key)
}

func (c *countingState) Put(ctx context.Context, key string, b []byte) error {
	c.note("put", key)
	return c.State.Put(ctx, key, b)
}

func (c *countingState) Delete(ctx context.Context, key string) error {
	c.note("delete", key)
	return c.State.Delete(ctx, key)
}

func (c *countingState) List(ctx context.Context, prefix string) iter.Seq2[largo.Record, error] {
	c.note("list", prefix)
	return c.State.List(ctx, prefix)
}

func (c *countingState) Page(ctx context.Context, prefix, after string, limit int) ([]largo.Record, error) {
	c.note("list", prefix)
	return c.State.(largo.StatePager).Page(ctx, prefix, after, limit)
}

func (c *countingState) Create(ctx context.Context, key string, b []byte) error {
	c.note("create", key)
	return c.State.(largo.StateCreator).Create(ctx, key, b)
}

func (c *countingState) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	c.note("get", key)
	return c.State.(largo.StateSwapper).GetVersion(ctx, key)
}

func (c *countingState) Swap(ctx context.Context, key string, b []byte, version string) (string, error) {
	c.note("swap", key)
	return c.State.(largo.StateSwapper).Swap(ctx, key, b, version)
}

func (c *countingState) DeleteIf(ctx context.Context, key, version string) error {
	c.note("delete", key)
	return c.State.(largo.StateSwapper).DeleteIf(ctx, key, version)
}

func (c *countingState) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.calls
	c.calls = map[string]int{}
	return m
}

// TestOutboxFromMemory: the sender sends the events its server queued
// from memory: each costs the state the record's write and its removal,
// never a listing or a read.
func TestOutboxFromMemory(t *testing.T) {
	rc := &answering{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := &countingState{State: newState(t), calls: map[string]int{}}
	h, err := New(Config{Notify: srv.URL, State: st, Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	run(t, h)
	notify(h, "first") // the first pass reads the outbox, and takes the lease
	poll.Wait(t, 10*time.Second, "the first event", func() bool { return len(rc.names()) == 1 })
	poll.Wait(t, 10*time.Second, "the first event's record removed", func() bool { n, _ := records(t, st.State, outboxPrefix); return n == 0 })
	st.reset()
	const events = 20
	for i := range events {
		notify(h, fmt.Sprint(i))
		poll.Wait(t, 10*time.Second, "the event", func() bool { return len(rc.names()) == 2+i })
	}
	poll.Wait(t, 10*time.Second, "the records removed", func() bool { n, _ := records(t, st.State, outboxPrefix); return n == 0 })
	calls := st.reset()
	delete(calls, "list") // records' own
	delete(calls, "get")
	if calls["put outbox"] != events || calls["delete outbox"] != events || calls["list outbox"] != 0 || calls["get outbox"] != 0 {
		t.Errorf("the state's calls for %d events: %v; want a put and a delete each, and nothing else of the outbox", events, calls)
	}
}

// TestOutboxSharedBound: a server that queues without sending keeps to
// the bound the sender counted.
func TestOutboxSharedBound(t *testing.T) {
	rc := &answering{answer: func(event) int { return http.StatusServiceUnavailable }}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := newState(t)
	cfg := Config{Notify: srv.URL, State: st, MaxEvents: 50, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Poll: 20 * time.Millisecond}
	sender, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run(t, sender)
	poll.Wait(t, 10*time.Second, "the sender's lease", sender.holding)
	for i := range 40 {
		notify(sender, fmt.Sprint("s", i))
	}
	obs := &counter{}
	cfg.Observer = obs
	other, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run(t, other)
	// The other server learns the size at its first look, and queues
	// only what fits.
	poll.Wait(t, 10*time.Second, "the other server's look at the outbox", func() bool {
		other.mu.Lock()
		defer other.mu.Unlock()
		return other.size.Events >= 40
	})
	for i := range 40 {
		notify(other, fmt.Sprint("o", i))
	}
	if n, _ := records(t, st, outboxPrefix); n > cfg.MaxEvents || obs.stage("dropped") != 30 {
		t.Errorf("%d events in the outbox, %d dropped by the other server; want at most %d, 30", n, obs.stage("dropped"), cfg.MaxEvents)
	}
}

// TestOutboxTwoSenders: two servers on one outbox, the receiver up: one
// of them sends; once the other is seen queuing, the events of both
// leave in the order they were queued, each once.
func TestOutboxTwoSenders(t *testing.T) {
	rc := &answering{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := newState(t)
	cfg := Config{Notify: srv.URL, State: st, Poll: 50 * time.Millisecond}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run(t, a)
	poll.Wait(t, 10*time.Second, "a's lease", a.holding)
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	notify(b, "b-first") // sent by a, which now reads the outbox at every send
	poll.Wait(t, 10*time.Second, "b's first event", func() bool { return len(rc.names()) == 1 })
	want := []string{"b-first"}
	for i := range 30 {
		h, name := a, fmt.Sprintf("%02d-a", i)
		if i%2 == 1 {
			h, name = b, fmt.Sprintf("%02d-b", i)
		}
		notify(h, name)
		want = append(want, name)
	}
	poll.Wait(t, 10*time.Second, "every event", func() bool { return len(rc.names()) >= len(want) })
	time.Sleep(3 * cfg.Poll) // room for a duplicate that should not come
	if got := rc.names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("delivered\n%s\nwant\n%s", strings.Join(got, ","), strings.Join(want, ","))
	}
}

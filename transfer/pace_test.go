package transfer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePacer records its waits and lets every byte through at once, or
// moves a fake clock by the time of the bytes at 1 MiB/s.
type fakePacer struct {
	quantum int
	log     *[]string // shared with a recorder, to check the order
	waits   []int
	clock   *fakeClock // moved a second per wait, when set
	err     error      // returned by every wait, when set
}

func (f *fakePacer) Quantum() int { return f.quantum }

func (f *fakePacer) Wait(ctx context.Context, n int) error {
	f.waits = append(f.waits, n)
	if f.log != nil {
		*f.log = append(*f.log, "wait")
	}
	if f.clock != nil {
		f.clock.add(time.Duration(n) * time.Second / (1 << 20))
	}
	return f.err
}

func (f *fakePacer) total() (n int) {
	for _, w := range f.waits {
		n += w
	}
	return n
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// orderRecorder is a recorder that notes each ReadFrom in a log shared
// with a fakePacer.
type orderRecorder struct {
	recorder
	log *[]string
}

func (r *orderRecorder) ReadFrom(src io.Reader) (int64, error) {
	*r.log = append(*r.log, "send")
	return r.recorder.ReadFrom(src)
}

// TestPacedReadFromKeepsFile checks that a paced file still reaches the
// underlying ReadFrom as an *os.File behind a LimitedReader (sendfile),
// in segments of at most the Pacer's quantum, each sent only after a wait
// for its bytes.
func TestPacedReadFromKeepsFile(t *testing.T) {
	f, data := tempFile(t, 10<<20+123)
	var log []string
	rec := &orderRecorder{recorder: recorder{ResponseRecorder: *httptest.NewRecorder()}, log: &log}
	p := &fakePacer{quantum: 1 << 20, log: &log}
	r := NewResponse(rec, Options{})
	r.Pace(context.Background(), p, nil)
	n, err := io.Copy(r, &io.LimitedReader{R: f, N: int64(len(data))})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("copied %d, %v", n, err)
	}
	if !bytes.Equal(rec.Body.Bytes(), data) {
		t.Fatal("body differs")
	}
	if len(rec.sources) != 11 {
		t.Errorf("%d segments; want 11 of at most 1 MiB", len(rec.sources))
	}
	for _, src := range rec.sources {
		l, ok := src.(*io.LimitedReader)
		if !ok {
			t.Fatalf("segment source %T; want *io.LimitedReader", src)
		}
		if _, ok := l.R.(*os.File); !ok {
			t.Fatalf("segment reads %T; want *os.File: pacing must keep sendfile", l.R)
		}
	}
	if want := strings.Repeat("wait send ", 11); strings.Join(log, " ")+" " != want {
		t.Errorf("order %v; want a wait before each segment", log)
	}
	if p.total() != len(data) {
		t.Errorf("waited for %d bytes; want %d", p.total(), len(data))
	}
	for _, w := range p.waits {
		if w > p.quantum {
			t.Errorf("a wait for %d bytes; quantum %d", w, p.quantum)
		}
	}
}

// TestPacedSegments: a paced segment is the pacer's quantum, larger than
// an unpaced segment when the quantum is.
func TestPacedSegments(t *testing.T) {
	f, data := tempFile(t, 10<<20+123)
	for quantum, want := range map[int]int{1 << 20: 11, 8 << 20: 2, 64 << 20: 1} {
		f.Seek(0, io.SeekStart)
		rec := &recorder{ResponseRecorder: *httptest.NewRecorder()}
		r := NewResponse(rec, Options{})
		r.Pace(context.Background(), &fakePacer{quantum: quantum}, nil)
		if n, err := io.Copy(r, &io.LimitedReader{R: f, N: int64(len(data))}); err != nil || n != int64(len(data)) {
			t.Fatalf("copied %d, %v", n, err)
		}
		if len(rec.sources) != want {
			t.Errorf("quantum %d: %d segments; want %d", quantum, len(rec.sources), want)
		}
	}
}

// TestPacedWrite checks the bodies that are not files (generated,
// compressed, from a bucket): written in pieces of at most the quantum,
// each after its wait.
func TestPacedWrite(t *testing.T) {
	rec := &recorder{ResponseRecorder: *httptest.NewRecorder()}
	p := &fakePacer{quantum: 10000}
	r := NewResponse(rec, Options{})
	r.Pace(context.Background(), p, nil)
	body := strings.Repeat("0123456789", 10_005)
	n, err := io.Copy(r, strings.NewReader(body)) // through the 32 KiB copy buffer
	if err != nil || n != int64(len(body)) || rec.Body.String() != body {
		t.Fatalf("copied %d, %v", n, err)
	}
	if _, err := r.Write([]byte(body)); err != nil { // one large write
		t.Fatal(err)
	}
	if p.total() != 2*len(body) {
		t.Errorf("waited for %d bytes; want %d", p.total(), 2*len(body))
	}
	for _, w := range p.waits {
		if w > p.quantum {
			t.Errorf("a wait for %d bytes; quantum %d", w, p.quantum)
		}
	}
}

// TestPacedBody checks that a paced body reads at most a quantum at a
// time and waits for every byte it read.
func TestPacedBody(t *testing.T) {
	payload := strings.Repeat("x", 100_000)
	req := httptest.NewRequest("PUT", "/f", strings.NewReader(payload))
	rec := httptest.NewRecorder()
	r := NewResponse(rec, Options{})
	body := r.Body(req, BodyOptions{})
	p := &fakePacer{quantum: 7000}
	r.Pace(context.Background(), nil, p)
	got, err := io.ReadAll(body)
	if err != nil || string(got) != payload {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if p.total() != len(payload) {
		t.Errorf("waited for %d bytes; want %d", p.total(), len(payload))
	}
	for _, w := range p.waits {
		if w > p.quantum {
			t.Errorf("a read of %d bytes; quantum %d", w, p.quantum)
		}
	}
}

// TestThrottledIsNotTheClients: a transfer held by its cap far below the
// minimum rate is not cut for it; the time it waited is the server's.
func TestThrottledIsNotTheClients(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	f, data := tempFile(t, 16<<20)
	rec := &recorder{ResponseRecorder: *httptest.NewRecorder()}
	opt := Options{MinRate: 10 << 20, IdleTimeout: time.Second, Now: clock.now}
	p := &fakePacer{quantum: 1 << 20, clock: clock} // 1 MiB/s: a tenth of the minimum
	r := NewResponse(rec, opt)
	r.Pace(context.Background(), p, nil)
	if _, err := io.Copy(r, &io.LimitedReader{R: f, N: int64(len(data))}); err != nil {
		t.Fatalf("a paced transfer was cut: %v", err)
	}
	if got := r.Throttled(); got != 16*time.Second {
		t.Errorf("throttled %s; want 16s", got)
	}

	req := httptest.NewRequest("PUT", "/f", bytes.NewReader(data))
	r = NewResponse(httptest.NewRecorder(), opt)
	body := r.Body(req, BodyOptions{MinRate: 10 << 20, IdleTimeout: time.Second, Now: clock.now})
	r.Pace(context.Background(), nil, &fakePacer{quantum: 1 << 20, clock: clock})
	if _, err := io.Copy(io.Discard, body); err != nil {
		t.Fatalf("a paced upload was cut: %v", err)
	}
	if got := body.Throttled(); got != 16*time.Second {
		t.Errorf("upload throttled %s; want 16s", got)
	}

	// The same time not spent waiting is the client's: cut.
	req = httptest.NewRequest("PUT", "/f", &slowReader{r: bytes.NewReader(data), clock: clock})
	r = NewResponse(httptest.NewRecorder(), opt)
	body = r.Body(req, BodyOptions{MinRate: 10 << 20, IdleTimeout: time.Second, Now: clock.now})
	if _, err := io.Copy(io.Discard, body); err != ErrTooSlow {
		t.Fatalf("a client slow on its own: %v; want ErrTooSlow", err)
	}
}

// slowReader moves the clock a second for each read of at most 1 MiB.
type slowReader struct {
	r     io.Reader
	clock *fakeClock
}

func (s *slowReader) Read(p []byte) (int, error) {
	s.clock.add(time.Second)
	return s.r.Read(p[:min(len(p), 1<<20)])
}

// TestPaceEnds: a wait that ends with the request's context ends the
// transfer, as a client that left, with nothing more sent.
func TestPaceEnds(t *testing.T) {
	f, data := tempFile(t, 4<<20)
	rec := &recorder{ResponseRecorder: *httptest.NewRecorder()}
	p := &fakePacer{quantum: 1 << 20, err: context.Canceled}
	r := NewResponse(rec, Options{})
	r.Pace(context.Background(), p, nil)
	n, err := io.Copy(r, &io.LimitedReader{R: f, N: int64(len(data))})
	if n != 0 || err != context.Canceled || len(rec.sources) != 0 {
		t.Fatalf("sent %d in %d segments, %v; want nothing and context.Canceled", n, len(rec.sources), err)
	}
	if o := r.Outcome(http.MethodGet); o != Aborted {
		t.Errorf("outcome %s; want aborted", o)
	}
}

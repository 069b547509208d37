package logwriter

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEveryLineOnce has many goroutines log numbered lines, through a small
// queue so that writers wait for room, into a real file: after Close the
// file holds every line once, whole, and each goroutine's lines in order.
func TestEveryLineOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := New(f, 512)
	const goroutines, lines = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			buf := make([]byte, 0, 64)
			for i := range lines {
				// The caller reuses its buffer, as slog's handlers do.
				buf = fmt.Appendf(buf[:0], "g=%d i=%d %s\n", g, i, strings.Repeat("x", i%50))
				if n, err := w.Write(buf); n != len(buf) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	f, err = os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	next := make([]int, goroutines)
	sc := bufio.NewScanner(f)
	total := 0
	for sc.Scan() {
		var g, i int
		var pad string
		if _, err := fmt.Sscanf(sc.Text(), "g=%d i=%d %s", &g, &i, &pad); err != nil && i%50 != 0 {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if g < 0 || g >= goroutines || i != next[g] || len(pad) != i%50 {
			t.Fatalf("line %q: want g=%d i=%d", sc.Text(), g, next[g])
		}
		next[g]++
		total++
	}
	if total != goroutines*lines {
		t.Fatalf("%d lines, want %d", total, goroutines*lines)
	}
}

// gate is a destination whose writes wait until it is opened.
type gate struct {
	open    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	got     strings.Builder
}

func (g *gate) Write(p []byte) (int, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.got.Write(p)
}

// TestOffThePath: while the destination is stuck, writes return at once
// until the queue is full; the one that would overflow it waits; nothing
// is lost once the destination moves again.
func TestOffThePath(t *testing.T) {
	g := &gate{open: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := New(g, 100)
	w.Write([]byte("first\n"))
	<-g.entered // the goroutine holds "first" and is stuck in the destination
	for range 10 {
		w.Write([]byte("0123456789")) // 100 bytes queued: returns at once
	}
	over := make(chan struct{})
	go func() {
		w.Write([]byte("over\n"))
		close(over)
	}()
	select {
	case <-over:
		t.Fatal("a write past the queue's size returned while the destination was stuck")
	case <-time.After(100 * time.Millisecond):
	}
	close(g.open)
	<-over
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "first\n" + strings.Repeat("0123456789", 10) + "over\n"
	if got := g.got.String(); got != want {
		t.Fatalf("destination got %q, want %q", got, want)
	}
}

// TestAfterClose: a write after Close goes straight to the destination,
// after what was queued.
func TestAfterClose(t *testing.T) {
	var b strings.Builder
	w := New(&b, 0)
	w.Write([]byte("a\n"))
	w.Close()
	if _, err := w.Write([]byte("b\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.String() != "a\nb\n" {
		t.Fatalf("got %q", b.String())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk gone") }

// TestDestinationError: the destination's failure is reported by Flush
// and Close, not hidden.
func TestDestinationError(t *testing.T) {
	w := New(failing{}, 0)
	w.Write([]byte("lost\n"))
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Flush = %v, want the destination's error", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close hid the destination's error")
	}
}

// BenchmarkLine is what a caller pays per access line: a file written
// directly, and the same file through a Writer.
func BenchmarkLine(b *testing.B) {
	line := []byte(`time=2026-01-01T00:00:00.000Z level=INFO msg=request method=GET path=/pub/small.bin status=200 bytes=4096 duration=41.2µs client=127.0.0.1:40000 outcome=complete` + "\n")
	for _, tt := range []struct {
		name  string
		queue bool
	}{{"direct", false}, {"queued", true}} {
		b.Run(tt.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var w interface{ Write([]byte) (int, error) } = f
			var q *Writer
			if tt.queue {
				q = New(f, 0)
				w = q
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w.Write(line)
				}
			})
			if q != nil {
				q.Close()
			}
		})
	}
}

package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"largo/internal/poll"
)

// TestLineProgress checks the lines printed when stderr is no terminal.
func TestLineProgress(t *testing.T) {
	var out lockedWriter
	p := &lineProgress{w: &out, every: 20 * time.Millisecond}
	p.Begin("f.bin", 4<<20, 1<<20)
	p.Add(1 << 20)
	poll.Wait(t, 10*time.Second, "a progress line", func() bool { return strings.Contains(out.String(), "\n") })
	p.End()
	n := out.String()
	// Five periods after End, no line has come.
	if poll.Until(5*p.every, p.every, func() bool { return out.String() != n }) {
		t.Error("lines went on after End")
	}
	first, _, _ := strings.Cut(n, "\n")
	if !strings.HasPrefix(first, "f.bin: 50% 2 MiB of 4 MiB, ") || !strings.Contains(first, "/s") || !strings.HasSuffix(first, " left") {
		t.Fatalf("progress line %q", first)
	}
	if p := progressFor(&out, true); p != nil {
		t.Error("-q still reports progress")
	}
}

// lockedWriter collects writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

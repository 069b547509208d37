package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"largo"
	"largo/client"
)

// lineEvery is how often progress is printed when stderr is no terminal.
const lineEvery = 5 * time.Second

// progressFor returns how transfers show their progress on w: a bar on a
// terminal, a line every few seconds elsewhere, nothing when quiet.
func progressFor(w io.Writer, quiet bool) func() client.Progress {
	if quiet {
		return nil
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return func() client.Progress { return &barProgress{w: w} }
	}
	return func() client.Progress { return &lineProgress{w: w, every: lineEvery} }
}

// barProgress draws a progress bar with bytes, rate and time left.
type barProgress struct {
	w   io.Writer
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

var _ client.Progress = (*barProgress)(nil)

func (b *barProgress) Begin(name string, total, done int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		b.bar.Exit()
		fmt.Fprintln(b.w)
	}
	b.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(name),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
	)
	if done > 0 {
		b.bar.Set64(done)
	}
}

func (b *barProgress) Add(n int64) {
	b.mu.Lock()
	bar := b.bar
	b.mu.Unlock()
	if bar != nil {
		bar.Add64(n)
	}
}

// Rename changes the bar's description.
func (b *barProgress) Rename(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		b.bar.Describe(name)
	}
}

// Clear erases the bar from its line, so that a line written to the
// terminal next is not drawn over; the bar comes back at its next
// change.
func (b *barProgress) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		b.bar.Clear()
	}
}

func (b *barProgress) End() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		b.bar.Exit()
		fmt.Fprintln(b.w)
		b.bar = nil
	}
}

// lineProgress prints one line every few seconds: for logs and pipes.
type lineProgress struct {
	w     io.Writer
	every time.Duration

	mu    sync.Mutex
	name  string
	total int64
	start int64 // bytes there at Begin
	since time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	n     atomic.Int64
}

var _ client.Progress = (*lineProgress)(nil)

func (l *lineProgress) Begin(name string, total, done int64) {
	l.End()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.name, l.total, l.start, l.since = name, total, done, time.Now()
	l.n.Store(done)
	l.stop = make(chan struct{})
	stop := l.stop
	l.done.Go(func() {
		t := time.NewTicker(l.every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				l.print()
			}
		}
	})
}

func (l *lineProgress) Add(n int64) { l.n.Add(n) }

// Rename changes the name the lines begin with.
func (l *lineProgress) Rename(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.name = name
}

func (l *lineProgress) End() {
	l.mu.Lock()
	stop := l.stop
	l.stop = nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		l.done.Wait()
	}
}

func (l *lineProgress) print() {
	l.mu.Lock()
	name, total, start, since := l.name, l.total, l.start, l.since
	l.mu.Unlock()
	n := l.n.Load()
	rate := float64(n-start) / time.Since(since).Seconds()
	line := fmt.Sprintf("%s: %s", name, largo.FormatSize(n))
	if total > 0 {
		line = fmt.Sprintf("%s: %d%% %s of %s", name, n*100/total, largo.FormatSize(n), largo.FormatSize(total))
	}
	line += fmt.Sprintf(", %s/s", largo.FormatSize(int64(rate)))
	if total > 0 && rate > 0 {
		line += ", " + (time.Duration(float64(total-n)/rate) * time.Second).Round(time.Second).String() + " left"
	}
	fmt.Fprintln(l.w, line)
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"largo"
	"largo/internal/poll"
	"largo/internal/ready"
)

// The server's lifetime, in this process: started and stopped again and
// again while clients write, it leaves nothing running, nothing held and
// nothing uncounted.

const stopsAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "1GiB"

[[rule]]
path = "/"
users = ["alice"]
allow = ["all"]
`

const aliceToken = "Bearer alice-token-0123456789"

// readyWriter is a server's standard output: it passes the ready line's
// content to found.
type readyWriter struct {
	mu    sync.Mutex
	buf   []byte
	found chan ready.Line
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if l, ok := ready.Parse(w.buf[:i]); ok {
			w.found <- l
		}
		w.buf = w.buf[i+1:]
	}
}

// running is a server run in this process.
type running struct {
	url     string
	signals chan os.Signal
	done    chan error
	log     *lockedWriter
}

// startIn runs largo with args in this process, and waits until it
// serves.
func startIn(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{signals: make(chan os.Signal, 2), done: make(chan error, 1), log: &lockedWriter{}}
	out := &readyWriter{found: make(chan ready.Line, 1)}
	e := &env{stdout: out, stderr: r.log, getenv: func(string) (string, bool) { return "", false }, signals: r.signals}
	go func() { r.done <- run(context.Background(), args, e) }()
	select {
	case l := <-out.found:
		r.url = l.URL
	case err := <-r.done:
		t.Fatalf("largo ended before serving: %v\n%s", err, r.log.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("largo did not serve within 20s\n%s", r.log.String())
	}
	return r
}

// stop sends sig and waits for the server to end.
func (r *running) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	r.signals <- sig
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("stopped by %v: %v\n%s", sig, err, r.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after %v\n%s", sig, r.log.String())
	}
}

// goroutines returns the stacks of this process's goroutines, but for
// those tusd leaves behind each of its requests: a timer that ends its
// request's context GracefulRequestCompletionTimeout (10 s) after the
// request, holding nothing else.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "tusd/v2/pkg/handler.newDelayedContext") {
			out = append(out, g)
		}
	}
	return out
}

// serverGoroutines returns the stacks of the goroutines that run largo's
// code and are not the tests'.
func serverGoroutines() []string {
	var out []string
	for _, g := range goroutines() {
		if strings.Contains(g, "_test.go:") {
			continue
		}
		for _, line := range strings.Split(g, "\n") {
			if strings.HasPrefix(line, "largo/") || strings.HasPrefix(line, "main.") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// stateHeld returns the leases left in the state area of dir: the hooks'
// sender's, and the uploads' appends'.
func stateHeld(t *testing.T, dir string) []string {
	t.Helper()
	var held []string
	state := filepath.Join(dir, largo.StateDir)
	if _, err := os.Stat(filepath.Join(state, "hooks", "sender")); err == nil {
		held = append(held, "hooks/sender")
	}
	leases, _ := os.ReadDir(filepath.Join(state, "uploads", "leases"))
	for _, l := range leases {
		held = append(held, "uploads/leases/"+l.Name())
	}
	return held
}

// filesIn returns the bytes and the count of the files in dir, outside
// the state area.
func filesIn(t *testing.T, dir string) [2]int64 {
	t.Helper()
	var u [2]int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == largo.StateDir:
			return filepath.SkipDir
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			u[0] += fi.Size()
			u[1]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// recordedUsage returns alice's usage as largo usage reads it from the
// store's record.
func recordedUsage(t *testing.T, dir string) [2]int64 {
	t.Helper()
	var out, errs lockedWriter
	if err := run(context.Background(), []string{"usage", "--json", dir}, quietEnv(&out, &errs)); err != nil {
		t.Fatalf("largo usage: %v\n%s", err, errs.String())
	}
	var u struct {
		Quotas []struct {
			User string
			Used struct{ Bytes, Files int64 }
		}
	}
	if err := json.Unmarshal([]byte(out.String()), &u); err != nil {
		t.Fatalf("largo usage: %v\n%s", err, out.String())
	}
	for _, q := range u.Quotas {
		if q.User == "alice" {
			return [2]int64{q.Used.Bytes, q.Used.Files}
		}
	}
	return [2]int64{}
}

// load is the clients of one run: writers that PUT files until the
// server stops taking them, and a tus upload whose append stalls, so that
// the stop has to cut it while it holds its lease.
type load struct {
	client  *http.Client
	wg      sync.WaitGroup
	puts    atomic.Int64
	stalled *io.PipeWriter
}

func startLoad(t *testing.T, url string, run, writers int) *load {
	t.Helper()
	l := &load{client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	req, _ := http.NewRequest("POST", url+"_largo/uploads/", nil)
	req.Header.Set("Authorization", aliceToken)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", "1048576")
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "r%d/big", run)))
	resp, err := l.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("tus creation: %s", resp.Status)
	}
	loc, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	body, stalled := io.Pipe()
	l.stalled = stalled
	patch, _ := http.NewRequest("PATCH", loc.String(), body)
	patch.Header.Set("Authorization", aliceToken)
	patch.Header.Set("Tus-Resumable", "1.0.0")
	patch.Header.Set("Upload-Offset", "0")
	patch.Header.Set("Content-Type", "application/offset+octet-stream")
	l.wg.Go(func() {
		if resp, err := l.client.Do(patch); err == nil {
			resp.Body.Close()
		}
	})
	l.wg.Go(func() { stalled.Write(make([]byte, 4096)) })
	for w := range writers {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				req, _ := http.NewRequest("PUT", fmt.Sprintf("%sr%d/w%d-%d", url, run, w, i), strings.NewReader(strings.Repeat("x", 1024)))
				req.Header.Set("Authorization", aliceToken)
				resp, err := l.client.Do(req)
				if err != nil {
					return // stopped
				}
				resp.Body.Close()
				if resp.StatusCode >= 300 && resp.StatusCode != http.StatusServiceUnavailable {
					return
				}
				l.puts.Add(1)
			}
		})
	}
	return l
}

// end lets the clients go and waits for them.
func (l *load) end() {
	l.stalled.CloseWithError(io.ErrUnexpectedEOF)
	l.wg.Wait()
	l.client.CloseIdleConnections()
}

// TestServerStops: a server with quotas, notifications, WebDAV and
// resumable uploads on, started and stopped fifty times (by SIGTERM and
// SIGINT) while clients write to it, has ended every
// goroutine it started once run returns, holds no lease in its state area
// (the hooks' sender's, an upload's append's), and has recorded the usage
// of every file it stored.
func TestServerStops(t *testing.T) {
	dir := t.TempDir()
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(stopsAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	var events atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		events.Add(1)
	}))
	defer receiver.Close()
	args := []string{"serve", dir, "--listen", "127.0.0.1:0", "--access", access, "--webdav",
		"--quota-sync", "1h", "--quota-reconcile", "0", "--hook-notify", receiver.URL,
		"--drain-timeout", "50ms", "--shutdown-timeout", "10s"}
	before := len(goroutines())
	const runs = 50
	for i := range runs {
		s := startIn(t, args...)
		l := startLoad(t, s.url, i, 3)
		poll.Wait(t, 10*time.Second, "writes, and an append holding its lease", func() bool {
			return l.puts.Load() >= 3 && slices.ContainsFunc(stateHeld(t, dir), func(k string) bool { return strings.HasPrefix(k, "uploads/") })
		})
		sig := []os.Signal{syscall.SIGTERM, syscall.SIGINT}[i%2]
		s.stop(t, sig)
		// At once: the stop has waited for the last records.
		if held := stateHeld(t, dir); len(held) > 0 {
			t.Fatalf("run %d: leases still held after the stop: %v", i, held)
		}
		if got, want := recordedUsage(t, dir), filesIn(t, dir); got != want {
			t.Fatalf("run %d: the usage recorded is %v (bytes, files); the files stored take %v", i, got, want)
		}
		// A goroutine that said it ended may still be returning.
		var left []string
		if !poll.Until(2*time.Second, time.Millisecond, func() bool { left = serverGoroutines(); return len(left) == 0 }) {
			t.Fatalf("run %d: %d goroutines of the server still running after it returned:\n%s", i, len(left), strings.Join(left, "\n\n"))
		}
		l.end()
	}
	if events.Load() == 0 {
		t.Error("no notification reached the receiver: the hooks' sender did not run")
	}
	var after []string
	if !poll.Until(10*time.Second, 20*time.Millisecond, func() bool { after = goroutines(); return len(after) <= before }) {
		t.Fatalf("%d goroutines before %d runs, %d after:\n%s", before, runs, len(after), strings.Join(after, "\n\n"))
	}
}

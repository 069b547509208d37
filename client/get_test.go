package client_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"largo/client"
)

func TestGetFresh(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "f.bin"), 3<<20+5, 1)
	srv, f := largoServer(t, dir)
	f.digest = reprDigest(want)
	out := filepath.Join(t.TempDir(), "f.bin")
	var l logs
	c := newClient(&l, 0)
	p := &countProgress{}
	c.Progress = func() client.Progress { return p }
	res, err := c.Get(context.Background(), srv.URL+"/f.bin", out)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileSHA(t, out); got != want || res.Size != 3<<20+5 || res.Moved != 3<<20+5 || res.Verified == "" {
		t.Fatalf("sha match %v, result %+v", got == want, res)
	}
	if p.added.Load() != 3<<20+5 {
		t.Errorf("progress saw %d bytes", p.added.Load())
	}
	if exists(out+".part") || exists(out+".part.json") {
		t.Error("part file or state left behind")
	}
	// The file takes the server's modification time, so a second run has
	// nothing to do.
	res, err = c.Get(context.Background(), srv.URL+"/f.bin", out)
	if err != nil || !res.UpToDate || res.Moved != 0 {
		t.Fatalf("second run: %+v, %v", res, err)
	}
}

func TestGetDigestMismatch(t *testing.T) {
	dir := t.TempDir()
	writeRandom(t, filepath.Join(dir, "f.bin"), 1<<20, 2)
	srv, f := largoServer(t, dir)
	f.digest = reprDigest("00000000000000000000000000000000000000000000000000000000000000aa")
	out := filepath.Join(t.TempDir(), "f.bin")
	var l logs
	_, err := newClient(&l, 3).Get(context.Background(), srv.URL+"/f.bin", out)
	if !errors.Is(err, client.ErrDigest) || errors.Is(err, client.ErrResumable) {
		t.Fatalf("error %v; want a digest mismatch", err)
	}
	if exists(out) || exists(out+".part") || exists(out+".part.json") {
		t.Error("a file is left after a digest mismatch")
	}
	// The bytes received are kept aside, and the error says where.
	if b, err2 := os.ReadFile(out + ".bad"); err2 != nil || len(b) != 1<<20 || !strings.Contains(err.Error(), out+".bad") {
		t.Errorf("kept aside: %d bytes, %v; error %v", len(b), err2, err)
	}
	if f.requests.Load() != 1 {
		t.Errorf("%d requests; a mismatch on a fresh download is not retried", f.requests.Load())
	}
}

// TestGetResume cuts a download, checks that the part file and its state
// stay, then resumes and checks that only the missing bytes are sent.
func TestGetResume(t *testing.T) {
	for _, segments := range []int{1, 4} {
		t.Run(map[int]string{1: "one stream", 4: "segments"}[segments], func(t *testing.T) {
			dir := t.TempDir()
			const size = 16 << 20
			want := writeRandom(t, filepath.Join(dir, "f.bin"), size, 3)
			srv, f := largoServer(t, dir)
			f.digest = reprDigest(want)
			f.cuts, f.cutAfter = 100, 3<<20
			out := filepath.Join(t.TempDir(), "f.bin")
			var l logs
			c := newClient(&l, 0)
			c.Segments = segments
			p := &countProgress{}
			c.Progress = func() client.Progress { return p }
			_, err := c.Get(context.Background(), srv.URL+"/f.bin", out)
			if !errors.Is(err, client.ErrResumable) {
				t.Fatalf("cut download: %v; want ErrResumable", err)
			}
			if !exists(out+".part") || !exists(out+".part.json") || exists(out) {
				t.Fatal("after a cut: want the part file and its state, and no target")
			}
			first, received := f.sent.Load(), p.added.Load()
			f.mu.Lock()
			f.cuts = 0
			f.mu.Unlock()
			res, err := c.Get(context.Background(), srv.URL+"/f.bin", out)
			if err != nil {
				t.Fatal(err)
			}
			if got := fileSHA(t, out); got != want || !res.Resumed {
				t.Fatalf("resumed download: sha match %v, %+v", got == want, res)
			}
			// The second run fetches exactly what the first did not receive
			// (a cut segment makes the others stop, so not all bytes the
			// server sent arrived).
			if second := f.sent.Load() - first; second != size-received {
				t.Errorf("second run: %d bytes sent; %d were missing", second, size-received)
			}
		})
	}
}

// TestGetRetries cuts the first answers: retries resume and finish in one
// call.
func TestGetRetries(t *testing.T) {
	dir := t.TempDir()
	const size = 8 << 20
	want := writeRandom(t, filepath.Join(dir, "f.bin"), size, 4)
	srv, f := largoServer(t, dir)
	f.cuts, f.cutAfter = 3, 1<<20
	out := filepath.Join(t.TempDir(), "f.bin")
	var l logs
	res, err := newClient(&l, 2).Get(context.Background(), srv.URL+"/f.bin", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if fileSHA(t, out) != want || f.sent.Load() != size || f.ranged.Load() != 3 || res.Moved != size {
		t.Fatalf("sent %d bytes in %d ranged requests; result %+v", f.sent.Load(), f.ranged.Load(), res)
	}
	if !l.has("retrying") {
		t.Error("no retry notice")
	}
}

// TestGetStall stalls an answer: the stall timeout ends the attempt and a
// retry resumes.
func TestGetStall(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "f.bin"), 4<<20, 5)
	srv, f := largoServer(t, dir)
	f.cuts, f.cutAfter, f.stall = 1, 1<<20, 3*time.Second
	out := filepath.Join(t.TempDir(), "f.bin")
	var l logs
	c := newClient(&l, 1)
	c.StallTimeout = 300 * time.Millisecond
	start := time.Now()
	if _, err := c.Get(context.Background(), srv.URL+"/f.bin", out); err != nil {
		t.Fatal(err)
	}
	if fileSHA(t, out) != want || !l.has("no data moved") {
		t.Fatalf("stalled download: notices %s", l.String())
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("took %s: the stall was waited out rather than cut", took)
	}
}

// TestGetRemoteChanged replaces the remote file between a cut and the
// resume: the download starts again from zero and says so.
func TestGetRemoteChanged(t *testing.T) {
	for _, segments := range []int{1, 3} {
		dir := t.TempDir()
		writeRandom(t, filepath.Join(dir, "f.bin"), 8<<20, 6)
		srv, f := largoServer(t, dir)
		f.cuts, f.cutAfter = 100, 2<<20
		out := filepath.Join(t.TempDir(), "f.bin")
		var l logs
		c := newClient(&l, 0)
		c.Segments = segments
		if _, err := c.Get(context.Background(), srv.URL+"/f.bin", out); !errors.Is(err, client.ErrResumable) {
			t.Fatal(err)
		}
		want := writeRandom(t, filepath.Join(dir, "f.bin"), 8<<20+100, 7)
		os.Chtimes(filepath.Join(dir, "f.bin"), time.Now().Add(time.Hour), time.Now().Add(time.Hour))
		f.mu.Lock()
		f.cuts = 0
		f.mu.Unlock()
		res, err := c.Get(context.Background(), srv.URL+"/f.bin", out)
		if err != nil {
			t.Fatal(err)
		}
		if fileSHA(t, out) != want || res.Resumed || !l.has("changed") {
			t.Fatalf("segments %d: sha match %v, %+v, notices:\n%s", segments, fileSHA(t, out) == want, res, l.String())
		}
	}
}

// TestGetNoRanges resumes against a server that ignores ranges: a clean
// restart from zero.
func TestGetNoRanges(t *testing.T) {
	for _, segments := range []int{1, 4} {
		dir := t.TempDir()
		want := writeRandom(t, filepath.Join(dir, "f.bin"), 6<<20, 8)
		srv, f := largoServer(t, dir)
		f.cuts, f.cutAfter = 1, 2<<20
		out := filepath.Join(t.TempDir(), "f.bin")
		var l logs
		c := newClient(&l, 0)
		if _, err := c.Get(context.Background(), srv.URL+"/f.bin", out); !errors.Is(err, client.ErrResumable) {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.noRanges = true
		f.mu.Unlock()
		c.Segments = segments
		if _, err := c.Get(context.Background(), srv.URL+"/f.bin", out); err != nil {
			t.Fatal(err)
		}
		if fileSHA(t, out) != want || !l.has("ignored the range") {
			t.Fatalf("segments %d: notices:\n%s", segments, l.String())
		}
		// A fresh segmented download from such a server falls back to one stream.
		out2 := filepath.Join(t.TempDir(), "g.bin")
		c.Segments = 4
		if _, err := c.Get(context.Background(), srv.URL+"/f.bin", out2); err != nil || fileSHA(t, out2) != want {
			t.Fatalf("segmented download without ranges: %v", err)
		}
		if !l.has("does not support ranges") {
			t.Errorf("no notice of the fallback:\n%s", l.String())
		}
	}
}

// TestGetCancel stops a download through its context: the state stays
// and the next run finishes it.
func TestGetCancel(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "f.bin"), 8<<20, 9)
	srv, f := largoServer(t, dir)
	f.cuts, f.cutAfter, f.stall = 1, 1<<20, 2*time.Second
	out := filepath.Join(t.TempDir(), "f.bin")
	var l logs
	c := newClient(&l, 5)
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("stop")) })
	_, err := c.Get(ctx, srv.URL+"/f.bin", out)
	if !errors.Is(err, client.ErrResumable) || err.Error() != "stopped before the end: stop" {
		t.Fatalf("cancelled download: %v", err)
	}
	if fi, err := os.Stat(out + ".part"); err != nil || fi.Size() != 1<<20 {
		t.Fatalf("part file after the cancel: %v", err)
	}
	if _, err := c.Get(context.Background(), srv.URL+"/f.bin", out); err != nil || fileSHA(t, out) != want {
		t.Fatalf("resume after cancel: %v", err)
	}
}

// TestGetSwitchToSegments resumes a one-stream part file with segments.
func TestGetSwitchToSegments(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "f.bin"), 12<<20, 10)
	srv, f := largoServer(t, dir)
	f.cuts, f.cutAfter = 1, 5<<20
	out := filepath.Join(t.TempDir(), "f.bin")
	var l logs
	c := newClient(&l, 0)
	if _, err := c.Get(context.Background(), srv.URL+"/f.bin", out); !errors.Is(err, client.ErrResumable) {
		t.Fatal(err)
	}
	c.Segments = 4
	res, err := c.Get(context.Background(), srv.URL+"/f.bin", out)
	if err != nil || fileSHA(t, out) != want || !res.Resumed || f.sent.Load() != 12<<20 {
		t.Fatalf("%v, %+v, %d bytes sent", err, res, f.sent.Load())
	}
}

func TestGetErrors(t *testing.T) {
	dir := t.TempDir()
	srv, f := largoServer(t, dir)
	var l logs
	c := newClient(&l, 3)
	_, err := c.Get(context.Background(), srv.URL+"/missing", filepath.Join(t.TempDir(), "m"))
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != 404 || errors.Is(err, client.ErrResumable) || f.requests.Load() != 1 {
		t.Fatalf("404: %v after %d requests", err, f.requests.Load())
	}
	// 503 is retried, then given up as resumable.
	busy := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) })
	bs := httpServer(t, busy)
	_, err = c.Get(context.Background(), bs.URL+"/x", filepath.Join(t.TempDir(), "x"))
	if !errors.As(err, &se) || se.Code != 503 || !errors.Is(err, client.ErrResumable) || !l.has("retrying") {
		t.Fatalf("503: %v", err)
	}
	if _, err := client.Target(srv.URL+"/dir/", ""); err == nil {
		t.Error("a URL ending in a slash has no file name")
	}
	if p, err := client.Target(srv.URL+"/a%20b.iso", t.TempDir()); err != nil || filepath.Base(p) != "a b.iso" {
		t.Errorf("target in a folder: %s %v", p, err)
	}
}

func TestGetTree(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{
		"a.bin":             writeRandom(t, filepath.Join(dir, "a.bin"), 2<<20, 11),
		"sub/b.bin":         writeRandom(t, filepath.Join(dir, "sub", "b.bin"), 100, 12),
		"sub/deep/c d.txt":  writeRandom(t, filepath.Join(dir, "sub", "deep", "c d.txt"), 0, 13),
		"other/#hash?.data": writeRandom(t, filepath.Join(dir, "other", "#hash?.data"), 5000, 14),
	}
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("x"), 0o644)
	srv, _ := largoServer(t, dir)
	out := filepath.Join(t.TempDir(), "tree")
	var l logs
	c := newClient(&l, 0)
	tr, err := c.GetTree(context.Background(), srv.URL+"/", out)
	if err != nil || tr.Files != 4 || tr.Failed != 0 {
		t.Fatalf("%+v %v\n%s", tr, err, l.String())
	}
	for name, sum := range want {
		if got := fileSHA(t, filepath.Join(out, filepath.FromSlash(name))); got != sum {
			t.Errorf("%s: wrong bytes", name)
		}
	}
	if exists(filepath.Join(out, ".hidden")) {
		t.Error("a hidden file was downloaded")
	}
	tr, err = c.GetTree(context.Background(), srv.URL+"/sub", filepath.Join(t.TempDir(), "sub"))
	if err != nil || tr.Files != 2 {
		t.Fatalf("subfolder: %+v %v", tr, err)
	}
	tr, err = c.GetTree(context.Background(), srv.URL+"/", out)
	if err != nil || tr.Files != 0 || tr.UpToDate != 4 || tr.Moved != 0 {
		t.Fatalf("second run: %+v %v", tr, err)
	}
}

// TestGetTreeUnsafeNames serves a listing whose names try to climb out of
// the target folder.
func TestGetTreeUnsafeNames(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"path":"/","entries":[{"name":"../escape","size":1},{"name":"/etc/x","size":1},{"name":"..","dir":true},{"name":"a/b","size":1},{"name":".ssh","dir":true},{"name":".bashrc","size":1},{"name":"esc\u001b[2J","size":1}]}`))
	})
	srv := httpServer(t, h)
	base := t.TempDir()
	var l logs
	tr, err := newClient(&l, 0).GetTree(context.Background(), srv.URL+"/", filepath.Join(base, "out"))
	if err == nil || tr.Failed != 7 || tr.Files != 0 {
		t.Fatalf("%+v %v", tr, err)
	}
	if exists(filepath.Join(base, "escape")) {
		t.Fatal("a name escaped the target folder")
	}
	if exists(filepath.Join(base, "out", ".ssh")) || exists(filepath.Join(base, "out", ".bashrc")) {
		t.Fatal("a hidden name was written")
	}
}

// TestGetMoreSegmentsOnResume: a download begun in 2 segments and
// resumed with 8 fetches the rest in 8 ranged requests, keeping what it
// had.
func TestGetMoreSegmentsOnResume(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "f.bin"), 32<<20, 11)
	srv, f := largoServer(t, dir)
	out := filepath.Join(t.TempDir(), "f.bin")
	var l logs
	c := newClient(&l, 0)
	c.Segments = 2
	ctx, cancel := context.WithCancelCause(context.Background())
	c.Progress = func() client.Progress { return &stopAfter{n: 8 << 20, stop: func() { cancel(errors.New("stop")) }} }
	if _, err := c.Get(ctx, srv.URL+"/f.bin", out); !errors.Is(err, client.ErrResumable) {
		t.Fatalf("first run: %v", err)
	}
	before, sent := f.ranged.Load(), f.sent.Load()
	c.Progress = nil
	c.Segments = 8
	res, err := c.Get(context.Background(), srv.URL+"/f.bin", out)
	if err != nil || fileSHA(t, out) != want || !res.Resumed {
		t.Fatalf("resumed with 8: %v, %+v", err, res)
	}
	if n := f.ranged.Load() - before; n != 8 {
		t.Errorf("%d ranged requests on the resume; want 8\n%s", n, l.String())
	}
	if f.sent.Load() > 32<<20+sent/2 {
		t.Errorf("%d bytes sent in all (%d in the first run); want about the file once", f.sent.Load(), sent)
	}
}

// stopAfter calls stop once n bytes have been reported.
type stopAfter struct {
	n    int64
	seen atomic.Int64
	stop func()
}

func (s *stopAfter) Begin(string, int64, int64) {}
func (s *stopAfter) End()                       {}
func (s *stopAfter) Add(n int64) {
	if s.seen.Add(n) >= s.n {
		s.stop()
	}
}

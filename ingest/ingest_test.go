package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/wire"
)

// spaceStore is a folder that reports a fixed free space.
type spaceStore struct {
	*disk.Store
	free int64
}

func (s spaceStore) Free(context.Context, string) (int64, error) { return s.free, nil }

// noAdopt is a folder that cannot adopt staged files, as a store whose
// staging lives elsewhere.
type noAdopt struct{ *disk.Store }

func (s noAdopt) Adopt() {} // hides disk.Store's Adopt

func newStore(t *testing.T, files map[string]string) (*disk.Store, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestAdmission: every refusal is known before a byte is read, with the
// status a writer expects.
func TestAdmission(t *testing.T) {
	s, _ := newStore(t, map[string]string{"file": "f", "dir/x": "x"})
	p := New(Config{Store: s, MaxSize: 100, NoMkdir: true})
	ctx := context.Background()
	for _, tt := range []struct {
		t    Target
		code int
	}{
		{Target{Name: "ok", Size: 10}, 0},
		{Target{Name: "dir/ok", Size: -1}, 0},
		{Target{Name: "", Size: 1}, http.StatusConflict},
		{Target{Name: ".env", Size: 1}, http.StatusForbidden},
		{Target{Name: "a/.git/config", Size: 1}, http.StatusForbidden},
		{Target{Name: "_largo/x", Size: 1}, http.StatusForbidden},
		{Target{Name: "bad\xff", Size: 1}, http.StatusBadRequest},
		{Target{Name: "big", Size: 101}, http.StatusRequestEntityTooLarge},
		{Target{Name: "dir", Size: 1}, http.StatusConflict},
		{Target{Name: "file/x", Size: 1}, http.StatusConflict},
		{Target{Name: "missing/x", Size: 1}, http.StatusConflict},
		{Target{Name: "file", Size: 1, Cond: largo.Condition{IfNoneMatch: true}}, http.StatusPreconditionFailed},
		{Target{Name: "new", Size: 1, Cond: largo.Condition{IfMatch: "*"}}, http.StatusPreconditionFailed},
		{Target{Name: "file", Size: 1, Cond: largo.Condition{IfMatch: `"other"`}}, http.StatusPreconditionFailed},
	} {
		err := p.Check(ctx, tt.t)
		code := 0
		if err != nil {
			code, _ = wire.Status(err)
		}
		if code != tt.code {
			t.Errorf("Check(%+v) = %v (%d); want %d", tt.t, err, code, tt.code)
		}
	}
}

// TestReservations: writes admitted together cannot together eat into
// the reserve; what a write used or gave back is free again.
func TestReservations(t *testing.T) {
	d, _ := newStore(t, nil)
	p := New(Config{Store: spaceStore{d, 100}, Reserve: 30})
	ctx := context.Background()
	a, err := p.Begin(ctx, Target{Name: "a", Size: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Begin(ctx, Target{Name: "b", Size: 60}); !errors.Is(err, largo.ErrNoSpace) {
		t.Fatalf("second write over the reserve: %v; want ErrNoSpace", err)
	}
	if err := p.Check(ctx, Target{Name: "b", Size: 11}); !errors.Is(err, largo.ErrNoSpace) {
		t.Fatalf("check of 11 bytes with 10 unpromised: %v", err)
	}
	a.Abort()
	b, err := p.Begin(ctx, Target{Name: "b", Size: 60})
	if err != nil {
		t.Fatalf("after the first write ended: %v", err)
	}
	// Bytes written are no longer promised: the store's free space (fixed
	// here) would count them.
	if _, err := b.ReadFrom(strings.NewReader(strings.Repeat("x", 60))); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Begin(ctx, Target{Name: "c", Size: 70}); err != nil {
		t.Fatalf("a write after another's bytes were written: %v", err)
	}
	b.Abort()

	// Concurrent admissions: of eight writes of 30 bytes with 70 free
	// above the reserve, exactly two get in.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var in []*Write
	p = New(Config{Store: spaceStore{d, 100}, Reserve: 30})
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := p.Begin(ctx, Target{Name: "w" + string(rune('a'+i)), Size: 30})
			if err == nil {
				mu.Lock()
				in = append(in, w)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(in) != 2 {
		t.Errorf("%d writes admitted; want 2", len(in))
	}
	for _, w := range in {
		w.Abort()
	}
}

// TestReceive: the limits hold for bodies of unknown length, a digest
// mismatch leaves nothing, and a good write reports its SHA-256.
func TestReceive(t *testing.T) {
	s, dir := newStore(t, map[string]string{"old": "old"})
	p := New(Config{Store: s, MaxSize: 1 << 20})
	ctx := context.Background()

	w, err := p.Begin(ctx, Target{Name: "big", Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadFrom(io.LimitReader(zeros{}, 2<<20)); !errors.Is(err, largo.ErrTooLarge) {
		t.Errorf("2 MiB of unknown length under a 1 MiB limit: %v", err)
	}
	w.Abort()

	wrong := sha256.Sum256([]byte("other"))
	w, err = p.Begin(ctx, Target{Name: "old", Size: 3, SHA256: wrong[:]})
	if err != nil {
		t.Fatal(err)
	}
	w.ReadFrom(strings.NewReader("new"))
	_, err = w.Commit(ctx)
	var de *largo.DigestError
	if !errors.As(err, &de) || wire.FormatDigest(de.SHA256) != wire.FormatDigest(sumOf("new")) {
		t.Fatalf("digest mismatch: %v", err)
	}
	if code, reason := wire.Status(err); code != 400 || !strings.Contains(reason, wire.FormatDigest(de.SHA256)) {
		t.Errorf("digest mismatch answered %d %q", code, reason)
	}
	if read(t, dir, "old") != "old" {
		t.Error("a refused write changed the file")
	}

	body := strings.Repeat("data ", 100000)
	right := sumOf(body)
	w, err = p.Begin(ctx, Target{Name: "new/file", Size: int64(len(body)), SHA256: right})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.ReadFrom(strings.NewReader(body)); err != nil || n != int64(len(body)) {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	res, err := w.Commit(ctx)
	if err != nil || !res.Created || string(res.SHA256) != string(right) || res.Info.Size != int64(len(body)) {
		t.Fatalf("Commit = %+v, %v", res, err)
	}
	if read(t, dir, "new/file") != body {
		t.Error("stored bytes differ")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, largo.StateDir, "tmp"))
	if len(ents) != 0 {
		t.Errorf("%d temporary files left", len(ents))
	}
}

// TestPlace puts staged bytes in place: adopted, or copied by a store
// that cannot adopt; the digest holds either way, and nothing outside
// the state folder is ever taken as staged.
func TestPlace(t *testing.T) {
	ctx := context.Background()
	for _, adopt := range []bool{true, false} {
		d, dir := newStore(t, map[string]string{".largo/tus/up": "staged", "victim": "mine"})
		var st largo.Store = d
		if !adopt {
			st = noAdopt{d}
		}
		p := New(Config{Store: st})
		staged := func(name string) Staged {
			return Staged{Name: name, Size: 6, Open: func(context.Context) (io.ReadCloser, error) {
				return os.Open(filepath.Join(dir, filepath.FromSlash(name)))
			}}
		}
		if adopt {
			for _, bad := range []string{"victim", ".largo/../victim"} {
				if _, err := p.Place(ctx, Target{Name: "x"}, staged(bad)); err == nil {
					t.Errorf("Place of %q succeeded", bad)
				}
			}
		}
		wrong := sha256.Sum256([]byte("other"))
		if _, err := p.Place(ctx, Target{Name: "x", SHA256: wrong[:]}, staged(".largo/tus/up")); !errors.Is(err, largo.ErrDigest) {
			t.Errorf("adopt %v: wrong digest: %v", adopt, err)
		}
		if read(t, dir, "x") == "staged" {
			t.Errorf("adopt %v: a mismatched upload was placed", adopt)
		}
		res, err := p.Place(ctx, Target{Name: "x", SHA256: sumOf("staged")}, staged(".largo/tus/up"))
		if err != nil || read(t, dir, "x") != "staged" || string(res.SHA256) != string(sumOf("staged")) {
			t.Errorf("adopt %v: Place = %+v, %v; file %q", adopt, res, err, read(t, dir, "x"))
		}
		if read(t, dir, "victim") != "mine" {
			t.Error("a file outside the state folder was taken")
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func sumOf(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// TestStalledWriteGivesBack: a write that announced a large body and then
// trickles it keeps its promise of space only while it makes progress;
// then others' writes get in. One that makes progress keeps it.
func TestStalledWriteGivesBack(t *testing.T) {
	d, _ := newStore(t, nil)
	now := time.Unix(2e9, 0)
	p := New(Config{Store: spaceStore{d, 1 << 30}, Now: func() time.Time { return now }})
	ctx := context.Background()
	trickle, err := p.Begin(ctx, Target{Name: "trickle", Size: 1<<30 - 10})
	if err != nil {
		t.Fatal(err)
	}
	defer trickle.Abort()
	steady, err := p.Begin(ctx, Target{Name: "steady", Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer steady.Abort()
	if _, err := p.Begin(ctx, Target{Name: "other", Size: 1 << 20}); !errors.Is(err, largo.ErrNoSpace) {
		t.Fatalf("while the space is promised: %v; want ErrNoSpace", err)
	}
	// A byte now and then is no progress.
	for range 5 {
		now = now.Add(StallAfter / 4)
		if _, err := trickle.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	w, err := p.Begin(ctx, Target{Name: "other", Size: 1 << 20})
	if err != nil {
		t.Fatalf("after the trickling write stalled: %v; want its space given back", err)
	}
	w.Abort()
	// A write that keeps making progress keeps its promise.
	p = New(Config{Store: spaceStore{d, 1 << 30}, Now: func() time.Time { return now }})
	busy, err := p.Begin(ctx, Target{Name: "busy", Size: 1<<30 - 10})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Abort()
	chunk := make([]byte, progressQuantum)
	for range 5 {
		now = now.Add(StallAfter / 2)
		if _, err := busy.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Begin(ctx, Target{Name: "other", Size: 1 << 29}); !errors.Is(err, largo.ErrNoSpace) {
		t.Fatalf("beside a write that makes progress: %v; want ErrNoSpace", err)
	}
}

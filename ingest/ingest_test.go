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
			code, _ = Status(err)
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
	var de *DigestError
	if !errors.As(err, &de) || de.Digest() != largo.FormatDigest(sumOf("new")) {
		t.Fatalf("digest mismatch: %v", err)
	}
	if code, reason := Status(err); code != 400 || !strings.Contains(reason, de.Digest()) {
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

// TestUploadComplete: both generations of the field, and values that
// say nothing.
func TestUploadComplete(t *testing.T) {
	for _, c := range []struct {
		hdr                  []string
		complete, stated, in bool
	}{
		{nil, false, false, false},
		{[]string{"Upload-Complete", "?1"}, true, true, false},
		{[]string{"Upload-Complete", "?0"}, false, true, true},
		{[]string{"Upload-Complete", "yes"}, false, false, false},
		{[]string{"Upload-Incomplete", "?1"}, false, true, true},
		{[]string{"Upload-Incomplete", "?0"}, true, true, false},
		{[]string{"Upload-Complete", "?1", "Upload-Incomplete", "?1"}, true, true, false},
		{[]string{"Upload-Complete", "?1", "Upload-Complete", "?0"}, false, false, false},
	} {
		h := http.Header{}
		for i := 0; i < len(c.hdr); i += 2 {
			h.Add(c.hdr[i], c.hdr[i+1])
		}
		complete, stated := UploadComplete(h)
		if complete != c.complete || stated != c.stated || Incomplete(h) != c.in {
			t.Errorf("%v: %v, %v, incomplete %v", c.hdr, complete, stated, Incomplete(h))
		}
	}
}

func TestLockTokens(t *testing.T) {
	for _, tc := range []struct {
		ifs  string
		want string
	}{
		{"", ""},
		{"(<opaquelocktoken:a>)", "opaquelocktoken:a"},
		{`<http://h/x> (<urn:a> ["e<t"]) (Not <DAV:no-lock>)`, "urn:a"},
		{"(<a>) (<b>)", "a,b"},
		{"(not <a>)(<b>)", "b"},
		{"(<unterminated", ""},
		{`(["etag"])`, ""},
	} {
		h := http.Header{}
		if tc.ifs != "" {
			h.Set("If", tc.ifs)
		}
		if got := strings.Join(LockTokens(h), ","); got != tc.want {
			t.Errorf("LockTokens(%q) = %q; want %q", tc.ifs, got, tc.want)
		}
	}
}

func FuzzLockTokens(f *testing.F) {
	f.Add(`<http://h/x> (<urn:a> ["e<t"]) (Not <DAV:no-lock>)`)
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{"If": {s}}
		for _, tok := range LockTokens(h) {
			if tok == "" || strings.ContainsAny(tok, "<>") {
				t.Errorf("LockTokens(%q) gave %q", s, tok)
			}
		}
	})
}

func TestCheckIf(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"(<opaquelocktoken:a-b/_x>)", true},
		{"(<urn:uuid:1>) (Not <DAV:no-lock>)", true},
		{`(["etag"])`, true},
		{`(<opaquelocktoken:a> ["W/\"x\""])`, true},
		{"<http://host/a.txt> (<opaquelocktoken:a>)", true},
		{"</a.txt> (<opaquelocktoken:a>) </b.txt> (Not <opaquelocktoken:b>) ([\"e\"])", true},
		{"  (  <t>  )  ", true},
		{"garbage", false},
		{"(", false},
		{"(<nolock>", false},
		{"()", false},
		{"(<>)", false},
		{"(Not)", false},
		{"(x)", false},
		{"<http://host/a.txt>", false},
		{"<http://host/a.txt> <http://host/b.txt> (<t>)", false},
		{"(<t>) <http://host/a.txt> (<t>)", false},
		{"(<t>))", false},
		{"(<a<b>)", false},
		{"([etag)", false},
	} {
		h := http.Header{"If": {tc.v}}
		if err := CheckIf(h); (err == nil) != tc.ok {
			t.Errorf("CheckIf(%q) = %v; want ok %v", tc.v, err, tc.ok)
		}
	}
	if err := CheckIf(http.Header{}); err != nil {
		t.Errorf("no If header: %v", err)
	}
}

func FuzzCheckIf(f *testing.F) {
	for _, s := range []string{"(<opaquelocktoken:a>)", "<http://h/a> (Not <t>) ([\"e\"])", "(", "garbage"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"If": {v}}
		if CheckIf(h) == nil && len(LockTokens(h)) == 0 && !strings.Contains(v, "[") && !strings.Contains(strings.ToLower(v), "not") {
			t.Errorf("CheckIf(%q) accepts a header without a token, an entity tag or a Not", v)
		}
	})
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

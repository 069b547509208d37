package filecache

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/storetest"
)

func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
		dir := t.TempDir()
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		st, err := disk.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		s := New(st, Options{})
		// Every file read twice already: the suite reads what is kept.
		for name := range files {
			for range 2 {
				if f, err := s.Open(context.Background(), name); err == nil {
					f.Close()
				}
			}
		}
		return s
	})
}

// counting is a store that counts the calls the cache makes of it.
type counting struct {
	largo.Store
	stats, opens atomic.Int64
	onOpen       func() // called after each open, when set
}

func (c *counting) Stat(ctx context.Context, name string) (largo.Info, error) {
	c.stats.Add(1)
	return c.Store.Stat(ctx, name)
}

func (c *counting) Open(ctx context.Context, name string) (largo.File, error) {
	c.opens.Add(1)
	f, err := c.Store.Open(ctx, name)
	if c.onOpen != nil {
		c.onOpen()
	}
	return f, err
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is a folder with the files given, a counting disk store on it
// and a cache in front with a settable clock.
type fixture struct {
	dir   string
	inner *counting
	clock *clock
	s     *Store
}

func newFixture(t *testing.T, opt Options, files map[string]string) *fixture {
	t.Helper()
	fx := &fixture{dir: t.TempDir(), clock: &clock{t: time.Unix(1e9, 0)}}
	for name, content := range files {
		fx.replace(t, name, content)
	}
	st, err := disk.Open(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fx.inner = &counting{Store: st}
	opt.Now = fx.clock.now
	fx.s = New(fx.inner, opt)
	return fx
}

// replace puts a new file at name, as an editor or a deployment would:
// written beside it, then renamed over it.
func (fx *fixture) replace(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(fx.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".new", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
}

// memo opens name, kept, and returns its memo.
func (fx *fixture) memo(t *testing.T, name string) *Memo {
	t.Helper()
	f, err := fx.s.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.(interface{ Memo() *Memo }).Memo()
}

// keep reads name twice: the second time, the cache keeps it.
func (fx *fixture) keep(t *testing.T, name string) {
	t.Helper()
	fx.read(t, name)
	fx.read(t, name)
}

// read opens name through the cache and returns its bytes, and whether
// the cache answered it from what it keeps.
func (fx *fixture) read(t *testing.T, name string) (string, bool) {
	t.Helper()
	f, err := fx.s.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading %q: %v", name, err)
	}
	_, kept := f.(*File)
	return string(b), kept
}

// A file kept is read with no open of the store, and within its window
// with no stat either; with a window of zero, with one stat a read.
func TestKeptFileNeedsNoStore(t *testing.T) {
	for _, window := range []time.Duration{time.Hour, 0} {
		keptReads(t, window)
	}
}

func keptReads(t *testing.T, window time.Duration) {
	fx := newFixture(t, Options{Window: window}, map[string]string{"a/hot.txt": "hot"})
	if got, kept := fx.read(t, "a/hot.txt"); got != "hot" || kept {
		t.Fatalf("first read %q, kept %v; want it read from the store", got, kept)
	}
	if got, kept := fx.read(t, "a/hot.txt"); got != "hot" || !kept {
		t.Fatalf("second read %q, kept %v; want it kept", got, kept)
	}
	opens, stats := fx.inner.opens.Load(), fx.inner.stats.Load()
	for range 10 {
		got, kept := fx.read(t, "a/hot.txt")
		if got != "hot" || !kept {
			t.Fatalf("read %q, kept %v; want hot from the cache", got, kept)
		}
	}
	want := int64(0)
	if window == 0 {
		want = 10
	}
	if o, s := fx.inner.opens.Load()-opens, fx.inner.stats.Load()-stats; o != 0 || s != want {
		t.Errorf("window %v: ten reads asked the store %d opens and %d stats; want none and %d", window, o, s, want)
	}
	if n, w := fx.s.Len(); n != 1 || w < 3 {
		t.Errorf("Len = %d files, %d bytes", n, w)
	}
}

// A file replaced behind the server is served new once the window has
// passed since it was last looked at, and not before.
func TestReplacedBehindServedNewAfterWindow(t *testing.T) {
	fx := newFixture(t, Options{Window: time.Second}, map[string]string{"f": "old"})
	fx.keep(t, "f")
	fx.replace(t, "f", "new!")
	fx.clock.advance(999 * time.Millisecond)
	if got, _ := fx.read(t, "f"); got != "old" {
		t.Fatalf("within the window: %q; the cache should not look before it ends", got)
	}
	fx.clock.advance(time.Millisecond)
	if got, kept := fx.read(t, "f"); got != "new!" || !kept {
		t.Fatalf("once the window passed: %q, kept %v; want new!, kept at once", got, kept)
	}
	// Unchanged, a file is looked at once per window, and kept.
	stats := fx.inner.stats.Load()
	fx.clock.advance(time.Second)
	for range 3 {
		if got, kept := fx.read(t, "f"); got != "new!" || !kept {
			t.Fatalf("read %q kept %v", got, kept)
		}
	}
	if s := fx.inner.stats.Load() - stats; s != 1 {
		t.Errorf("%d stats for three reads of an unchanged file after the window; want 1", s)
	}
}

// A change told through the server, whatever its name, has every file
// kept looked at again before it is served: a file reached through a
// link on a folder is told of under the link's name.
func TestChangedLooksAgainAtOnce(t *testing.T) {
	fx := newFixture(t, Options{Window: time.Hour}, map[string]string{"real/f": "old"})
	fx.keep(t, "real/f")
	fx.replace(t, "real/f", "new")
	fx.s.Changed("link/f") // the write went through a name that leads there
	if got, _ := fx.read(t, "real/f"); got != "new" {
		t.Fatalf("after a change told: %q, want new", got)
	}
	stats := fx.inner.stats.Load()
	if got, kept := fx.read(t, "real/f"); got != "new" || !kept {
		t.Fatalf("read %q kept %v", got, kept)
	}
	if s := fx.inner.stats.Load() - stats; s != 0 {
		t.Errorf("%d stats after the change was seen; want none", s)
	}
}

// A change told while a file is being read in keeps that version out of
// the cache: it may be the one the change replaced.
func TestChangeDuringFillNotKept(t *testing.T) {
	fx := newFixture(t, Options{Window: time.Hour}, map[string]string{"f": "old"})
	fx.read(t, "f")
	fx.inner.onOpen = func() { fx.s.Changed("f") }
	if got, _ := fx.read(t, "f"); got != "old" {
		t.Fatalf("read %q", got)
	}
	fx.inner.onOpen = nil
	if n, _ := fx.s.Len(); n != 0 {
		t.Fatalf("%d files kept; want none after a change told during the read", n)
	}
}

// A file that grows while it is read in is not kept.
func TestChangedWhileReadNotKept(t *testing.T) {
	fx := newFixture(t, Options{Window: time.Hour}, map[string]string{"log": "line 1\n"})
	fx.read(t, "log")
	fx.inner.onOpen = func() {
		f, err := os.OpenFile(filepath.Join(fx.dir, "log"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString("line 2\n")
		f.Close()
	}
	got, kept := fx.read(t, "log")
	fx.inner.onOpen = nil
	if kept {
		t.Fatalf("a file that grew while read was kept (%q)", got)
	}
	if n, _ := fx.s.Len(); n != 0 {
		t.Fatalf("%d files kept", n)
	}
	if !strings.HasPrefix(got, "line 1\n") {
		t.Fatalf("read %q", got)
	}
}

func TestLargeFileFromTheStore(t *testing.T) {
	big := strings.Repeat("x", 1025)
	fx := newFixture(t, Options{MaxFile: 1024}, map[string]string{"big": big, "small": "s"})
	f, err := fx.s.Open(context.Background(), "big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(largo.OSFile); !ok {
		t.Errorf("a file over MaxFile opened as %T; want the store's, for sendfile", f)
	}
	if b, _ := io.ReadAll(f); string(b) != big {
		t.Error("wrong bytes")
	}
	fx.keep(t, "small")
	fx.keep(t, "big")
	if n, _ := fx.s.Len(); n != 1 {
		t.Errorf("%d files kept; want only the small one", n)
	}
}

func TestBounded(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		files[n] = strings.Repeat(n, 1000)
	}
	fx := newFixture(t, Options{MaxFiles: 3, MaxBytes: 1 << 20}, files)
	for n := range files {
		fx.keep(t, n)
	}
	if n, _ := fx.s.Len(); n != 3 {
		t.Errorf("%d files kept; want MaxFiles, 3", n)
	}
	fx = newFixture(t, Options{MaxBytes: 2*(1000+1+entryWeight) + 10}, files)
	for n := range files {
		fx.keep(t, n)
	}
	if n, w := fx.s.Len(); n != 2 || w > 2*(1000+1+entryWeight)+10 {
		t.Errorf("%d files of %d bytes kept; want 2 within MaxBytes", n, w)
	}
}

// A memo lives as long as the version was last looked at: after the
// window, or a change told, it is derived again.
func TestMemoForgottenWhenLookedAtAgain(t *testing.T) {
	fx := newFixture(t, Options{Window: time.Second}, map[string]string{"f": "x"})
	memo := func() *Memo { return fx.memo(t, "f") }
	fx.keep(t, "f")
	memo().Store("derived")
	if v := memo().Load(); v != "derived" {
		t.Fatalf("memo = %v within the window", v)
	}
	fx.clock.advance(time.Second)
	if v := memo().Load(); v != nil {
		t.Fatalf("memo = %v after the window; want it forgotten", v)
	}
	memo().Store("again")
	fx.s.Changed("other")
	if v := memo().Load(); v != nil {
		t.Fatalf("memo = %v after a change; want it forgotten", v)
	}
}

// With no window the file is looked at before every answer, but what was
// derived from its version stays while the version does, for at most
// MemoLife, and never past a change told.
func TestMemoKeptAcrossLooksOfOneVersion(t *testing.T) {
	fx := newFixture(t, Options{}, map[string]string{"f": "x"})
	memo := func() *Memo { return fx.memo(t, "f") }
	fx.keep(t, "f")
	memo().Store("derived")
	fx.clock.advance(MemoLife / 2)
	if v := memo().Load(); v != "derived" {
		t.Fatalf("memo = %v on the next look at the same version; want it kept", v)
	}
	fx.clock.advance(MemoLife / 2)
	if v := memo().Load(); v != nil {
		t.Fatalf("memo = %v after MemoLife; want it forgotten", v)
	}
	memo().Store("again")
	fx.s.Changed("other")
	if v := memo().Load(); v != nil {
		t.Fatalf("memo = %v after a change; want it forgotten", v)
	}
}

func TestFileReadsAndSeeks(t *testing.T) {
	fx := newFixture(t, Options{}, map[string]string{"f": "0123456789"})
	fx.keep(t, "f")
	f, err := fx.s.Open(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(-3, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if n, err := io.Copy(&b, f); n != 3 || err != nil || b.String() != "789" {
		t.Fatalf("copy after seek: %d %v %q", n, err, b.String())
	}
	if _, err := f.Seek(-1, io.SeekStart); err == nil {
		t.Error("negative seek allowed")
	}
	p := make([]byte, 4)
	if n, err := f.(io.ReaderAt).ReadAt(p, 8); n != 2 || err != io.EOF {
		t.Errorf("ReadAt past the end: %d %v", n, err)
	}
	if in := f.Info(); in.Size != 10 || in.ETag == "" || in.Name != "f" {
		t.Errorf("Info %+v", in)
	}
}

func TestErrorsNotKept(t *testing.T) {
	fx := newFixture(t, Options{}, map[string]string{"d/f": "x"})
	if _, err := fx.s.Open(context.Background(), "missing"); err == nil {
		t.Fatal("missing file opened")
	}
	if _, err := fx.s.Open(context.Background(), "d"); err == nil {
		t.Fatal("folder opened")
	}
	if n, _ := fx.s.Len(); n != 0 {
		t.Errorf("%d kept after errors", n)
	}
}

// A file asked for once is served from the store and not kept: a scan
// of many files, each asked for once, costs what it costs without the
// cache. The second time within a while, it is kept.
func TestKeptTheSecondTime(t *testing.T) {
	fx := newFixture(t, Options{MaxFiles: 64}, map[string]string{"once": "1", "twice": "2"})
	if _, kept := fx.read(t, "once"); kept {
		t.Fatal("kept the first time")
	}
	if n, _ := fx.s.Len(); n != 0 {
		t.Fatalf("%d kept after one read", n)
	}
	fx.read(t, "twice")
	if _, kept := fx.read(t, "twice"); !kept {
		t.Fatal("not kept the second time")
	}
	if n, _ := fx.s.Len(); n != 1 {
		t.Fatalf("%d kept; want the file asked for twice alone", n)
	}
}

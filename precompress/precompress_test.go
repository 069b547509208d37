package precompress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/encode"
	"largo/ingest"
	"largo/record"
	"largo/sidecar"
)

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writes returns a write pipeline on a disk store of dir.
func writes(t *testing.T, dir string) *ingest.Pipeline {
	t.Helper()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ingest.New(ingest.Config{Store: s, Files: filesOf(s)})
}

// filesOf returns the records of files of s.
func filesOf(s *disk.Store) *record.Files {
	return record.NewFiles(record.New(s.State(), record.Options{}), record.FilesOptions{})
}

func run(t *testing.T, dir string, anySidecars bool) (Summary, []Event) {
	t.Helper()
	var mu sync.Mutex
	var events []Event
	cfg := Config{Writes: writes(t, dir), Level: encode.Best, AnySidecars: anySidecars, Progress: func(ev Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }}
	plan, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), cfg, plan)
	if err != nil {
		t.Fatal(err)
	}
	return sum, events
}

// TestPrecompress runs precompress on a folder three times, recording
// its sidecars, and with anySidecars taking a hand-made stale old.txt.gz
// for a sidecar to write over; without, it is a file of its own, left.
func TestPrecompress(t *testing.T) {
	for _, anySidecars := range []bool{false, true} {
		t.Run(fmt.Sprintf("any=%v", anySidecars), func(t *testing.T) { testPrecompress(t, anySidecars) })
	}
}

func testPrecompress(t *testing.T, anySidecars bool) {
	dir := t.TempDir()
	text := bytes.Repeat([]byte("2025-03-01 12:00:00 INFO served /index.html in 3ms\n"), 500)
	noise := make([]byte, 50000)
	rand.NewChaCha8([32]byte{3}).Read(noise)
	write(t, filepath.Join(dir, "app.log"), text)
	write(t, filepath.Join(dir, "sub/data.json"), text)
	write(t, filepath.Join(dir, "README"), text)                 // text, known by its bytes
	write(t, filepath.Join(dir, "noise.txt"), noise)             // text by name, incompressible
	write(t, filepath.Join(dir, "photo.jpg"), text)              // never compressed, whatever it holds
	write(t, filepath.Join(dir, "tiny.css"), []byte("a{b:c}"))   // too small
	write(t, filepath.Join(dir, ".hidden/x.log"), text)          // never served
	write(t, filepath.Join(dir, "old.txt"), text)                // has a stale sidecar
	write(t, filepath.Join(dir, "old.txt.gz"), []byte("stale!")) // older than old.txt, below
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "old.txt.gz"), past, past)

	sum, events := run(t, dir, anySidecars)
	want := Summary{Sidecars: 11, Foreign: 1} // old.txt.gz is a file of its own
	if anySidecars {
		want = Summary{Sidecars: 12}
	}
	if sum.Files != 5 || sum.Compressed != 5 || sum.Fresh != 0 || sum.Sidecars != want.Sidecars || sum.Foreign != want.Foreign || sum.Dropped != 3 || sum.Failed != 0 {
		t.Errorf("first run: %+v", sum)
	}
	if len(events) != 15 || sum.Before != 4*int64(len(text))+int64(len(noise)) || sum.After >= sum.Before/2 {
		t.Errorf("first run: %d events, %d -> %d bytes", len(events), sum.Before, sum.After)
	}
	for _, name := range []string{"app.log", "sub/data.json", "README", "old.txt"} {
		for _, c := range encode.Codings {
			if name == "old.txt" && c == encode.Gzip && !anySidecars {
				if b, err := os.ReadFile(filepath.Join(dir, "old.txt.gz")); err != nil || string(b) != "stale!" {
					t.Errorf("old.txt.gz, a file of its own, was changed: %q, %v", b, err)
				}
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, encode.Sidecar(name, c)))
			if err != nil {
				t.Fatalf("%s: %v", encode.Sidecar(name, c), err)
			}
			r, _ := encode.NewReader(bytes.NewReader(b), c)
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, text) {
				t.Errorf("%s does not decode to the original: %v", encode.Sidecar(name, c), err)
			}
		}
	}
	var all []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, _ error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			all = append(all, filepath.ToSlash(rel))
		}
		return nil
	})
	for _, unwanted := range []string{"noise.txt.gz", "noise.txt.br", "noise.txt.zst", "photo.jpg.gz", "tiny.css.gz", ".hidden/x.log.gz", "app.log.gz.zst"} {
		if slices.Contains(all, unwanted) {
			t.Errorf("%s written", unwanted)
		}
	}
	for _, f := range all {
		if strings.HasSuffix(f, ".tmp") {
			t.Errorf("temporary file left: %s", f)
		}
	}

	// Second run: everything fresh but the file whose sidecars were all
	// dropped; then a changed file is done again.
	// Every sidecar written is recorded, and nothing else.
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files := filesOf(st)
	for _, name := range []string{"app.log.gz", "sub/data.json.br", "README.zst", "old.txt.br", "old.txt.gz"} {
		rec, err := files.Get(context.Background(), name)
		if recorded := err == nil && rec.Source != ""; recorded != (anySidecars || name != "old.txt.gz") {
			t.Errorf("%s recorded: %v (%v)", name, recorded, err)
		}
	}

	sum, _ = run(t, dir, anySidecars)
	if sum.Fresh != 4 || sum.Compressed != 1 || sum.Sidecars != 0 {
		t.Errorf("second run: %+v", sum)
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "app.log"), future, future)
	sum, _ = run(t, dir, anySidecars)
	if sum.Fresh != 3 || sum.Compressed != 2 || sum.Sidecars != 3 {
		t.Errorf("after a change: %+v", sum)
	}
}

func TestPrecompressCancelled(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), bytes.Repeat([]byte("line of text\n"), 10000))
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Writes: writes(t, dir)}
	plan, err := Prepare(ctx, cfg)
	if err != nil || len(plan.Files) != 1 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	cancel()
	sum, err := Run(ctx, cfg, plan)
	if err == nil || sum.Sidecars != 0 {
		t.Errorf("cancelled run: %+v, %v", sum, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("cancelled run left %d entries", len(ents))
	}
}

// TestChangedDuringCompression: a file written to while it is compressed
// gets no sidecar, and its write leaves nothing in the store's staging.
func TestChangedDuringCompression(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, bytes.Repeat([]byte("line of text\n"), 100000))
	var once sync.Once
	var events []Event
	cfg := Config{
		Writes:  writes(t, dir),
		Jobs:    1,
		Codings: []encode.Coding{encode.Gzip},
		Read: func(int64) {
			once.Do(func() {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.WriteString("one more line\n")
				f.Close()
			})
		},
		Progress: func(ev Event) { events = append(events, ev) },
	}
	plan, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), cfg, plan)
	if err != nil || sum.Failed != 1 || sum.Sidecars != 0 || len(events) != 1 || !errors.Is(events[0].Err, errChanged) {
		t.Fatalf("run over a changing file: %+v, %v, events %+v", sum, err, events)
	}
	if _, err := os.Stat(p + ".gz"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a.log.gz: %v; want no sidecar", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, disk.TempDir)); len(ents) != 0 {
		t.Errorf("the aborted write left %d files in %s", len(ents), disk.TempDir)
	}
}

// TestNoTemporaryFilesBeside: while sidecars are written, nothing but the
// files and the finished sidecars ever appears in the folders: the bytes
// in progress are in the store's staging.
func TestNoTemporaryFilesBeside(t *testing.T) {
	dir := t.TempDir()
	text := bytes.Repeat([]byte("2025-03-01 12:00:00 INFO served /index.html in 3ms\n"), 5000)
	write(t, filepath.Join(dir, "a.log"), text)
	write(t, filepath.Join(dir, "sub/b.json"), text)
	var mu sync.Mutex
	var strays []string
	staged := false
	look := func() {
		mu.Lock()
		defer mu.Unlock()
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			switch {
			case rel == largo.StateDir:
				return fs.SkipDir
			case rel == "." || d.IsDir() && rel == "sub":
			case strings.HasSuffix(rel, ".log") || strings.HasSuffix(rel, ".json"):
			default:
				if _, _, ok := encode.SidecarBase(rel); !ok && !slices.Contains(strays, rel) {
					strays = append(strays, rel)
				}
			}
			return nil
		})
		if ents, _ := os.ReadDir(filepath.Join(dir, disk.TempDir)); len(ents) > 0 {
			staged = true
		}
	}
	cfg := Config{Writes: writes(t, dir), Read: func(int64) { look() }, Progress: func(Event) { look() }}
	plan, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := Run(context.Background(), cfg, plan); err != nil || sum.Sidecars != 6 {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	look()
	if len(strays) > 0 {
		t.Errorf("files other than sidecars appeared beside the files: %v", strays)
	}
	if !staged {
		t.Errorf("no write in progress was seen in %s", disk.TempDir)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, disk.TempDir)); len(ents) != 0 {
		t.Errorf("%d files left in %s", len(ents), disk.TempDir)
	}
}

// racingStore is a folder where another writer replaces a file just
// before each removal.
type racingStore struct {
	*disk.Store
	before func(name string)
}

func (s racingStore) Remove(ctx context.Context, name string, opt largo.RemoveOptions) error {
	s.before(name)
	return s.Store.Remove(ctx, name, opt)
}

// TestStaleSidecarRemoved: a stale sidecar that is not replaced (the file
// no longer compresses well enough) is removed, with its record, unless
// it was rewritten between the look and the removal.
func TestStaleSidecarRemoved(t *testing.T) {
	noise := make([]byte, 50000)
	rand.NewChaCha8([32]byte{5}).Read(noise)
	past := time.Now().Add(-time.Hour)
	for _, race := range []bool{false, true} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "noise.txt"), noise)
		side := filepath.Join(dir, "noise.txt.gz")
		write(t, side, []byte("stale"))
		os.Chtimes(side, past, past)
		s, err := disk.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// A sidecar precompress wrote from an older noise.txt.
		sin, err := s.Stat(context.Background(), "noise.txt.gz")
		if err != nil {
			t.Fatal(err)
		}
		files := filesOf(s)
		if err := sidecar.Put(context.Background(), files, "noise.txt.gz", sin, `"an older noise.txt"`); err != nil {
			t.Fatal(err)
		}
		rs := racingStore{Store: s, before: func(string) {}}
		if race {
			rs.before = func(string) {
				write(t, side, []byte("stale, and rewritten meanwhile"))
				os.Chtimes(side, past, past)
			}
		}
		cfg := Config{Writes: ingest.New(ingest.Config{Store: rs, Files: files}), Codings: []encode.Coding{encode.Gzip}}
		plan, err := Prepare(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if sum, err := Run(context.Background(), cfg, plan); err != nil || sum.Dropped != 1 || sum.Failed != 0 {
			t.Fatalf("race %v: %+v, %v", race, sum, err)
		}
		_, err = os.Stat(side)
		if race && err != nil {
			t.Errorf("a sidecar rewritten before the removal was removed: %v", err)
		}
		if !race && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the stale sidecar is still there: %v", err)
		}
		if _, err := files.Get(context.Background(), "noise.txt.gz"); !race && !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("the stale sidecar's record is still there: %v", err)
		}
	}
}

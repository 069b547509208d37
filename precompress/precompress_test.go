package precompress

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/encode"
)

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir string) (Summary, []Event) {
	t.Helper()
	var mu sync.Mutex
	var events []Event
	cfg := Config{Dir: dir, Level: encode.Best, Progress: func(ev Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }}
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

func TestPrecompress(t *testing.T) {
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

	sum, events := run(t, dir)
	if sum.Files != 5 || sum.Compressed != 5 || sum.Fresh != 0 || sum.Sidecars != 12 || sum.Dropped != 3 || sum.Failed != 0 {
		t.Errorf("first run: %+v", sum)
	}
	if len(events) != 15 || sum.Before != 4*int64(len(text))+int64(len(noise)) || sum.After >= sum.Before/2 {
		t.Errorf("first run: %d events, %d -> %d bytes", len(events), sum.Before, sum.After)
	}
	for _, name := range []string{"app.log", "sub/data.json", "README", "old.txt"} {
		for _, c := range encode.Codings {
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
	sum, _ = run(t, dir)
	if sum.Fresh != 4 || sum.Compressed != 1 || sum.Sidecars != 0 {
		t.Errorf("second run: %+v", sum)
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "app.log"), future, future)
	sum, _ = run(t, dir)
	if sum.Fresh != 3 || sum.Compressed != 2 || sum.Sidecars != 3 {
		t.Errorf("after a change: %+v", sum)
	}
}

func TestPrecompressCancelled(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), bytes.Repeat([]byte("line of text\n"), 10000))
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Dir: dir}
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

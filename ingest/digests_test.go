package ingest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo"
	"largo/disk"
	"largo/record"
)

// withDigests returns a folder holding files, a pipeline on it that
// records digests, and the keeper that answers them.
func withDigests(t *testing.T, files map[string]string, wrap func(*disk.Store) largo.Store) (*disk.Store, string, *Pipeline, *record.Files) {
	t.Helper()
	s, dir := newStore(t, files)
	k := recordsOf(s)
	var st largo.Store = s
	if wrap != nil {
		st = wrap(s)
	}
	return s, dir, New(Config{Store: st, Files: k}), k
}

// recordsOf returns the records of files of s.
func recordsOf(s *disk.Store) *record.Files {
	return record.NewFiles(record.New(s.State(), record.Options{}), record.FilesOptions{})
}

// digestOf returns the digest recorded for the file name as it is now.
func digestOf(t *testing.T, s *disk.Store, k *record.Files, name string) []byte {
	t.Helper()
	in, err := s.Stat(context.Background(), name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	rec, err := k.Of(context.Background(), name, in.ETag)
	if err != nil {
		return nil
	}
	return rec.Sum()
}

// TestDigestsRecorded: whatever carried the bytes (a write, staged bytes
// adopted or copied, a copy by the store), the committed version's
// digest is kept, and a copy of a file without one has none.
func TestDigestsRecorded(t *testing.T) {
	ctx := context.Background()
	for _, adopt := range []bool{true, false} {
		var wrap func(*disk.Store) largo.Store
		if !adopt {
			wrap = func(d *disk.Store) largo.Store { return noAdopt{d} }
		}
		s, dir, p, k := withDigests(t, map[string]string{".largo/tus/up": "staged", "plain": "p"}, wrap)

		w, err := p.Begin(ctx, Target{Name: "d/put", Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.ReadFrom(strings.NewReader("written")); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := digestOf(t, s, k, "d/put"); !bytes.Equal(got, sumOf("written")) {
			t.Errorf("a write: %x", got)
		}

		staged := Staged{Name: ".largo/tus/up", Size: 6, Open: func(context.Context) (io.ReadCloser, error) {
			return os.Open(filepath.Join(dir, ".largo", "tus", "up"))
		}}
		if _, err := p.Place(ctx, Target{Name: "placed"}, staged); err != nil {
			t.Fatal(err)
		}
		if got := digestOf(t, s, k, "placed"); !bytes.Equal(got, sumOf("staged")) {
			t.Errorf("adopt %v: placed: %x", adopt, got)
		}

		for src, want := range map[string][]byte{"d/put": sumOf("written"), "plain": nil} {
			w, err := p.BeginCopy(ctx, Target{Name: src + ".copy", Size: 1}, src)
			if err != nil {
				t.Fatal(err)
			}
			res, err := w.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := digestOf(t, s, k, src+".copy"); !bytes.Equal(got, want) || !bytes.Equal(res.SHA256, want) {
				t.Errorf("a copy of %s: %x (result %x); want %x", src, got, res.SHA256, want)
			}
		}
	}
}

// TestDigestsMoved: a rename carries the digests of a file and of every
// file below a folder, a move by copies (made by the store or streamed)
// too, and a removal drops the file's.
func TestDigestsMoved(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"rename", "copies", "streamed"} {
		copies := mode != "rename"
		var wrap func(*disk.Store) largo.Store
		if mode == "streamed" {
			wrap = func(d *disk.Store) largo.Store { return noCopy{d} }
		}
		s, _, p, k := withDigests(t, nil, wrap)
		for name, body := range map[string]string{"f": "file", "d/x": "x", "d/e/y": "y"} {
			w, err := p.Begin(ctx, Target{Name: name, Size: -1})
			if err != nil {
				t.Fatal(err)
			}
			w.ReadFrom(strings.NewReader(body))
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		move := func(from, to string) {
			t.Helper()
			if copies {
				if err := p.MoveByCopy(ctx, s, from, to, nil); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := s.Rename(ctx, from, to); err != nil {
				t.Fatal(err)
			}
			p.Renamed(ctx, from, to)
		}
		move("f", "g")
		move("d", "moved")
		for name, body := range map[string]string{"g": "file", "moved/x": "x", "moved/e/y": "y"} {
			if got := digestOf(t, s, k, name); !bytes.Equal(got, sumOf(body)) {
				t.Errorf("%s: %s: %x", mode, name, got)
			}
		}
		for _, gone := range []string{"f", "d/x", "d/e/y"} {
			if _, err := k.Get(ctx, gone); err == nil {
				t.Errorf("%s: the record of %s stayed", mode, gone)
			}
		}
		rm, err := p.CheckRemove(ctx, "g", largo.Condition{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := rm.Remove(ctx, "g", largo.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		p.Forget(ctx, "g")
		if _, err := k.Get(ctx, "g"); err == nil {
			t.Errorf("%s: the record of a removed file stayed", mode)
		}
	}
}

package digests_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"largo"
	"largo/digests"
	"largo/disk"
	"largo/record"
)

// folder returns a real folder store holding files.
func folder(t *testing.T, files map[string]string) (*disk.Store, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		write(t, dir, name, body)
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sum(s string) []byte { b := sha256.Sum256([]byte(s)); return b[:] }

func stat(t *testing.T, st largo.Store, name string) largo.Info {
	t.Helper()
	in, err := st.Stat(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// records returns the records of files of st.
func records(st *disk.Store) *record.Files {
	return record.NewFiles(record.New(st.State(), record.Options{}), record.FilesOptions{})
}

func TestLookup(t *testing.T) {
	ctx := context.Background()
	st, dir := folder(t, map[string]string{"a/f.bin": "one"})
	files := records(st)
	k := digests.New(files, digests.Options{Store: st})
	in := stat(t, st, "a/f.bin")
	if got, err := k.Lookup(ctx, "a/f.bin", in.ETag); got != nil || err != nil {
		t.Fatalf("before any record: %x, %v", got, err)
	}
	if err := files.Put(ctx, record.File{Name: "a/f.bin", ETag: in.ETag, Size: in.Size, SHA256: hex.EncodeToString(sum("one"))}); err != nil {
		t.Fatal(err)
	}
	if got, err := k.Lookup(ctx, "a/f.bin", in.ETag); !bytes.Equal(got, sum("one")) || err != nil {
		t.Fatalf("recorded: %x, %v", got, err)
	}
	if got, _ := k.Peek(ctx, "a/f.bin", in.ETag); !bytes.Equal(got, sum("one")) {
		t.Fatalf("peeked: %x", got)
	}
	// Replaced out of band: the old digest is never served.
	write(t, dir, "a/f.bin", "other content")
	changed := stat(t, st, "a/f.bin")
	if changed.ETag == in.ETag {
		t.Fatal("the folder gave a rewritten file the same ETag")
	}
	if got, _ := k.Lookup(ctx, "a/f.bin", changed.ETag); got != nil {
		t.Fatalf("a changed file's old digest was served: %x", got)
	}
	if got, _ := k.Peek(ctx, "a/f.bin", changed.ETag); got != nil {
		t.Fatalf("a changed file's old digest was peeked: %x", got)
	}
	// Another name with the same ETag has none.
	if got, _ := k.Lookup(ctx, "b/f.bin", in.ETag); got != nil {
		t.Error("a record answered for another name")
	}
	// A record with no digest (a file whose owner alone is known) has none.
	files.Put(ctx, record.File{Name: "a/f.bin", ETag: changed.ETag, Owner: "alice"})
	if got, err := k.Lookup(ctx, "a/f.bin", changed.ETag); got != nil || err != nil {
		t.Errorf("a record without a digest: %x, %v", got, err)
	}
}

func TestNoState(t *testing.T) {
	var nilKeeper *digests.Keeper
	for _, k := range []*digests.Keeper{nilKeeper, digests.New(nil, digests.Options{})} {
		ctx := context.Background()
		if got, err := k.Lookup(ctx, "a", `"e"`); got != nil || err != nil {
			t.Errorf("without a state area: %x, %v", got, err)
		}
		if _, err := k.Hash(ctx, "", digests.HashOptions{}); !errors.Is(err, largo.ErrUnsupported) {
			t.Errorf("Hash without a state area: %v", err)
		}
	}
}

func TestHash(t *testing.T) {
	ctx := context.Background()
	st, dir := folder(t, map[string]string{"a": "aaa", "d/b": "bbbb", "d/e/c": ""})
	k := digests.New(records(st), digests.Options{Store: st})
	var events []digests.Event
	s, err := k.Hash(ctx, "", digests.HashOptions{Event: func(ev digests.Event) { events = append(events, ev) }})
	if err != nil || s.Hashed != 3 || s.Fresh != 0 || s.Failed != 0 || s.Bytes != 7 || len(events) != 3 {
		t.Fatalf("first pass: %+v, %v, %d events", s, err, len(events))
	}
	for n, body := range map[string]string{"a": "aaa", "d/b": "bbbb", "d/e/c": ""} {
		if got, _ := k.Lookup(ctx, n, stat(t, st, n).ETag); !bytes.Equal(got, sum(body)) {
			t.Errorf("%s: %x", n, got)
		}
	}
	// Again: nothing read. One changed: only it.
	write(t, dir, "d/b", "changed")
	s, err = k.Hash(ctx, "d", digests.HashOptions{})
	if err != nil || s.Hashed != 1 || s.Fresh != 1 || s.Bytes != 7 {
		t.Fatalf("second pass: %+v, %v", s, err)
	}
	if got, _ := k.Lookup(ctx, "d/b", stat(t, st, "d/b").ETag); !bytes.Equal(got, sum("changed")) {
		t.Errorf("the changed file: %x", got)
	}
	// One file by name, forced, within a rate.
	s, err = k.Hash(ctx, "a", digests.HashOptions{Force: true, Rate: 1 << 20})
	if err != nil || s.Hashed != 1 || s.Bytes != 3 {
		t.Fatalf("one file: %+v, %v", s, err)
	}
	if _, err := k.Hash(ctx, "missing", digests.HashOptions{}); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("a missing name: %v", err)
	}
}

// TestHashRate reads a file under a cap and checks the cap held: the
// limiter's clock is real, so the file is small and the cap low.
func TestHashRate(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a second")
	}
	ctx := context.Background()
	st, _ := folder(t, map[string]string{"f": string(make([]byte, 192<<10))})
	k := digests.New(records(st), digests.Options{Store: st})
	start := time.Now()
	if _, err := k.Hash(ctx, "f", digests.HashOptions{Rate: 128 << 10}); err != nil {
		t.Fatal(err)
	}
	// 64 KiB of burst, then 128 KiB at 128 KiB/s.
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("192 KiB at 128 KiB/s took %v", took)
	}
}

// TestHashKeepsCRC32: hashing records the CRC-32 with the digest, for
// the archives; a file whose record has a digest but no CRC-32 (one
// uploaded through largo) is read once more to get it; the bytes read
// are told as they go.
func TestHashKeepsCRC32(t *testing.T) {
	ctx := context.Background()
	st, _ := folder(t, map[string]string{"copied.bin": "copied onto the disk", "uploaded.bin": "uploaded through largo"})
	files := records(st)
	up := stat(t, st, "uploaded.bin")
	files.Put(ctx, record.File{Name: "uploaded.bin", ETag: up.ETag, Size: up.Size, SHA256: hex.EncodeToString(sum("uploaded through largo"))})
	k := digests.New(files, digests.Options{Store: st})
	var read int64
	s, err := k.Hash(ctx, "", digests.HashOptions{Read: func(n int64) { read += n }})
	if err != nil || s.Hashed != 2 || s.Fresh != 0 {
		t.Fatalf("%+v %v; want both hashed", s, err)
	}
	if read != s.Bytes || read != int64(len("copied onto the disk")+len("uploaded through largo")) {
		t.Errorf("told of %d bytes read; %d were", read, s.Bytes)
	}
	for name, body := range map[string]string{"copied.bin": "copied onto the disk", "uploaded.bin": "uploaded through largo"} {
		crc, ok := k.CRC32(ctx, name, stat(t, st, name).ETag)
		if !ok || crc != crc32.ChecksumIEEE([]byte(body)) {
			t.Errorf("%s: CRC-32 %08x, %v", name, crc, ok)
		}
		if _, ok := k.CRC32(ctx, name, `"another version"`); ok {
			t.Errorf("%s: a CRC-32 for another version", name)
		}
	}
	if s, _ := k.Hash(ctx, "", digests.HashOptions{}); s.Fresh != 2 || s.Hashed != 0 {
		t.Errorf("again: %+v; want both fresh", s)
	}
}

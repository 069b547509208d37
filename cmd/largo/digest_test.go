package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo"
	"largo/client"
	"largo/digests"
	"largo/disk"
)

func hexOf(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

// recorded returns the digest recorded for the file name of the folder
// dir as it is now, in hexadecimal, or "".
func recorded(t *testing.T, dir, name string) string {
	t.Helper()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Stat(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := digests.New(recordsOf(s), digests.Options{}).Lookup(context.Background(), name, in.ETag)
	if err != nil || sum == nil {
		return ""
	}
	return hex.EncodeToString(sum)
}

// TestDigest: largo digest records what it hashes in the served folder
// around its paths, prints it as sha256sum does, and reads a file again
// only when it changed.
func TestDigest(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.txt": "a", "sub/b.txt": "b", "sub/c.txt": "c"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	// A folder never served: it is the served folder (its records go
	// with the folder, removed below).
	out, stderr, err := runCLI(t, "digest", filepath.Join(dir, "sub"))
	if err != nil || out != hexOf("b")+"  b.txt\n"+hexOf("c")+"  c.txt\n" && out != hexOf("c")+"  c.txt\n"+hexOf("b")+"  b.txt\n" {
		t.Fatalf("digest sub: %v\n%s%s", err, out, stderr)
	}
	os.RemoveAll(filepath.Join(dir, "sub", largo.StateDir))
	// Once served (its state folder there), a file below is found in it.
	os.MkdirAll(filepath.Join(dir, largo.StateDir), 0o755)
	out, stderr, err = runCLI(t, "digest", "--rate", "10MB/s", filepath.Join(dir, "sub", "b.txt"), filepath.Join(dir, "a.txt"))
	if err != nil || out != hexOf("b")+"  sub/b.txt\n"+hexOf("a")+"  a.txt\n" || !strings.Contains(stderr, "2 files hashed") {
		t.Fatalf("digest two files: %v\n%s%s", err, out, stderr)
	}
	if got := recorded(t, dir, "sub/b.txt"); got != hexOf("b") {
		t.Errorf("sub/b.txt recorded %q", got)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed"), 0o644)
	out, stderr, err = runCLI(t, "digest", "--store", dir)
	if err != nil || !strings.Contains(out, hexOf("changed")+"  a.txt\n") || !strings.Contains(stderr, "2 files hashed (8 B read), 1 already recorded") {
		t.Fatalf("digest --store: %v\n%s%s", err, out, stderr)
	}
	if got := recorded(t, dir, "a.txt"); got != hexOf("changed") {
		t.Errorf("a.txt recorded %q after its change", got)
	}
}

// TestDigestUsage: what cannot be hashed is the user's to fix.
func TestDigestUsage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("f"), 0o644)
	for _, args := range [][]string{
		{"digest"},
		{"digest", filepath.Join(dir, "missing")},
		{"digest", filepath.Join(dir, "f")}, // no served folder above it
		{"digest", "--store", dir, "../escape"},
		{"digest", "--rate", "fast", dir},
	} {
		_, stderr, err := runCLI(t, args...)
		if exitCode(err) != exitUsage {
			t.Errorf("%v: exit %d (%v)\n%s", args, exitCode(err), err, stderr)
		}
	}
}

// recordingProgress keeps what a progress is told.
type recordingProgress struct {
	total, added int64
	names        []string
	ended        bool
}

func (r *recordingProgress) Begin(name string, total, _ int64) {
	r.total = total
	r.names = append(r.names, name)
}
func (r *recordingProgress) Add(n int64)        { r.added += n }
func (r *recordingProgress) End()               { r.ended = true }
func (r *recordingProgress) Rename(name string) { r.names = append(r.names, name) }

// TestDigestProgress: largo digest's progress counts the files and bytes
// below the names first, then every byte read and every file done (one
// already recorded at once), so that its bar ends full.
func TestDigestProgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, body := range map[string]string{"a.bin": strings.Repeat("a", 3000), "sub/b.bin": "bb", "sub/c.bin": strings.Repeat("c", 70000)} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := digests.New(recordsOf(st), digests.Options{Store: st})
	if _, err := k.Hash(ctx, "sub/b.bin", digests.HashOptions{}); err != nil {
		t.Fatal(err)
	}
	rp := &recordingProgress{}
	dp := newDigestProgress(ctx, func() client.Progress { return rp }, st, []string{""})
	s, err := k.Hash(ctx, "", digests.HashOptions{Rate: 1 << 20, Read: dp.read, Event: dp.done})
	dp.end()
	if err != nil || s.Hashed != 2 || s.Fresh != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	if rp.total != 73002 || rp.added != rp.total || !rp.ended {
		t.Errorf("total %d, added %d, ended %v; want 73002 and a full bar", rp.total, rp.added, rp.ended)
	}
	if want := []string{"hashing: 0 of 3 files", "hashing: 1 of 3 files", "hashing: 2 of 3 files", "hashing: 3 of 3 files"}; strings.Join(rp.names, "|") != strings.Join(want, "|") {
		t.Errorf("names %q; want %q", rp.names, want)
	}
}

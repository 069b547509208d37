package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/disk"
)

// runCLI runs largo in-process with args and no environment variables.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(string) (string, bool) { return "", false }}
	err = run(context.Background(), args, e)
	return out.String(), errb.String(), err
}

// TestPrecompressSweeps: what an interrupted write of a process that is
// gone left in the folder's staging is removed before the sidecars are
// written (what a running server is writing is not), and the sidecars'
// own writes leave nothing there.
func TestPrecompressSweeps(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.log"), bytes.Repeat([]byte("GET /index.html 200\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(dir, filepath.FromSlash(disk.TempDir))
	os.MkdirAll(staging, 0o755)
	// One left by a process that is gone, one of another process still
	// writing (this one's parent stands for it).
	live := fmt.Sprintf("%d-live.part", os.Getppid())
	for _, name := range []string{"2147483646-0123abcd.part", live} {
		if err := os.WriteFile(filepath.Join(staging, name), []byte("half a sidecar"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := runCLI(t, "precompress", dir, "--level", "fast", "--progress", "none")
	if err != nil || !strings.Contains(out, "removed 1 temporary files") || !strings.Contains(out, "3 sidecars written") {
		t.Fatalf("precompress: %v\n%s%s", err, out, stderr)
	}
	// The write of a process still running stays.
	if ents, err := os.ReadDir(staging); err != nil || len(ents) != 1 || ents[0].Name() != live {
		t.Errorf("%s holds %d files (%v); want live.part alone", disk.TempDir, len(ents), err)
	}
	for _, ext := range []string{".zst", ".br", ".gz"} {
		if _, err := os.Stat(filepath.Join(dir, "app.log"+ext)); err != nil {
			t.Error(err)
		}
	}
}

// TestPrecompressUsage: a missing or doubled source, a file, a missing
// folder, a bad bucket URL and a bad flag are the user's to fix.
func TestPrecompressUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	for _, args := range [][]string{
		{"precompress"},
		{"precompress", t.TempDir(), "--store", t.TempDir()},
		{"precompress", file},
		{"precompress", filepath.Join(t.TempDir(), "missing")},
		{"precompress", "--store", "s3://"},
		{"precompress", t.TempDir(), "--jobs", "-1"},
		{"precompress", t.TempDir(), "--sidecars", "some"},
	} {
		_, _, err := runCLI(t, args...)
		if exitCode(err) != exitUsage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v (exit %d); want a one-line usage error", args, err, exitCode(err))
		}
	}
}

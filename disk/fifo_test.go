//go:build unix

package disk

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"largo"
	"largo/internal/testenv"
)

// TestNamedPipe checks that a named pipe in the folder is refused at once,
// as a file and as a folder, instead of waiting for a writer for ever.
func TestNamedPipe(t *testing.T) {
	dir := makeTree(t, map[string]string{"a.txt": "a"})
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		testenv.Missing(t, "cannot make a named pipe in the test's folder (%v): run the tests on a filesystem that has them", err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 2)
	go func() {
		_, err := s.Open(context.Background(), "pipe")
		done <- err
	}()
	go func() {
		var err error
		for _, e := range s.List(context.Background(), "pipe") {
			err = e
		}
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrNotDir) {
				t.Errorf("opening a named pipe: %v; want not found or not a folder", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("opening a named pipe blocked")
		}
	}
	for in, err := range s.List(context.Background(), "") {
		if err == nil && in.Name == "pipe" {
			t.Error("the listing shows the named pipe")
		}
	}
}

package main

import (
	"os"
	"strings"
	"testing"

	"largo/proc"
)

// TestDropStartupPages checks that dropping the executable's pages shrinks
// the resident set, that the process runs on, and that the peak is reset.
func TestDropStartupPages(t *testing.T) {
	before, err := proc.ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dropStartupPages()
	after, _ := proc.ReadMemory(os.Getpid())
	if after.RSS >= before.RSS {
		t.Fatalf("RSS %d KiB before, %d KiB after", before.RSS>>10, after.RSS>>10)
	}
	// Code runs again from the page cache.
	if !strings.Contains(envName("still-works"), "STILL_WORKS") {
		t.Fatal("code after the drop misbehaves")
	}
	resetPeak()
	m, _ := proc.ReadMemory(os.Getpid())
	if m.Peak >= before.Peak && before.Peak > m.RSS+(1<<20) {
		t.Fatalf("peak not reset: %d KiB, RSS %d KiB", m.Peak>>10, m.RSS>>10)
	}
}

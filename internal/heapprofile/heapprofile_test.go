package heapprofile

import (
	"runtime"
	"testing"
)

// TestOffUntilOn: the test binary links runtime/pprof, so the runtime
// starts sampling at its default rate; the package's initialisation turns
// that off, and On brings back the rate the process started with.
func TestOffUntilOn(t *testing.T) {
	if startRate != defaultRate {
		t.Skipf("started with memprofilerate %d, not the runtime's default", startRate)
	}
	if Sampling() {
		t.Fatalf("sampling at rate %d before On", runtime.MemProfileRate)
	}
	On()
	defer func() { runtime.MemProfileRate = 0 }()
	if runtime.MemProfileRate != defaultRate {
		t.Fatalf("after On the rate is %d, want %d", runtime.MemProfileRate, defaultRate)
	}
}

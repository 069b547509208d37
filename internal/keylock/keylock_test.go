package keylock

import (
	"sync"
	"testing"
)

// TestLock: holders of one key take turns, other keys do not wait, and
// no lock outlives its last holder.
func TestLock(t *testing.T) {
	var s Set
	var wg sync.WaitGroup
	var counts [3]int // each guarded by its key's lock alone: -race checks it
	for i := range 200 {
		k := i % 3
		wg.Go(func() {
			unlock := s.Lock(string(rune('a' + k)))
			defer unlock()
			n := counts[k]
			counts[k] = n + 1
		})
	}
	wg.Wait()
	if counts[0]+counts[1]+counts[2] != 200 {
		t.Errorf("counts %v", counts)
	}
	if s.Len() != 0 {
		t.Errorf("%d locks left", s.Len())
	}
	unlockA := s.Lock("a")
	done := make(chan struct{})
	go func() { s.Lock("b")(); close(done) }()
	<-done // would hang if "b" waited for "a"
	unlockA()
}

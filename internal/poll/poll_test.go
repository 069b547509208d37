package poll

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilMet(t *testing.T) {
	var calls atomic.Int64
	if !Until(5*time.Second, time.Millisecond, func() bool { return calls.Add(1) == 3 }) {
		t.Fatal("a condition met at the third call was not")
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d calls; want 3: Until goes on after the condition is met", n)
	}
}

func TestUntilTimeout(t *testing.T) {
	var calls atomic.Int64
	start := time.Now()
	if Until(50*time.Millisecond, 10*time.Millisecond, func() bool { calls.Add(1); return false }) {
		t.Fatal("a condition never met was")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("gave up after %s, before the timeout", took)
	}
	if n := calls.Load(); n < 2 {
		t.Errorf("%d calls; want the first and one at the deadline at least", n)
	}
}

// recorder is a testing.TB that records a failure instead of ending the
// running test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }

func TestWait(t *testing.T) {
	r := &recorder{}
	Wait(r, 30*time.Millisecond, "the impossible", func() bool { return false })
	if r.failed != "waited 30ms for the impossible: it did not happen" {
		t.Errorf("failure %q", r.failed)
	}
	r = &recorder{}
	Wait(r, time.Second, "the obvious", func() bool { return true })
	if r.failed != "" {
		t.Errorf("failure %q for a condition that held", r.failed)
	}
}

func TestSteady(t *testing.T) {
	values := []int{5, 4, 3, 3, 3, 3, 2}
	i := 0
	v, ok := Steady(5*time.Second, time.Millisecond, 3, func() int { v := values[min(i, len(values)-1)]; i++; return v })
	if !ok || v != 3 || i != 5 {
		t.Errorf("Steady = %d, %v after %d reads; want 3, true after 5", v, ok, i)
	}
	n := 0
	v, ok = Steady(30*time.Millisecond, time.Millisecond, 3, func() int { n++; return n })
	if ok || v != n {
		t.Errorf("Steady of a figure that never settles = %d, %v; want the last (%d), false", v, ok, n)
	}
}

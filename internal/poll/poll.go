// Package poll waits for a condition by checking it again and again until
// it holds or a deadline passes: what a test does instead of sleeping for a
// while and hoping the thing it waits for has happened by then. A wait
// that is met returns as soon as it is, and one that is not fails with a
// bound, however loaded the machine.
//
// It is for tests. It keeps no state; its functions are safe for
// concurrent use.
package poll

import (
	"testing"
	"time"
)

// Until calls cond every interval until it returns true, and then returns
// true; or, once timeout has passed, returns false. cond is called at
// least once, and once more at the deadline.
func Until(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(interval, left))
	}
}

// Wait is Until every 20 ms for a test: it fails t, saying what it waited
// for, when cond does not hold within timeout.
func Wait(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(timeout, 20*time.Millisecond, cond) {
		t.Fatalf("waited %s for %s: it did not happen", timeout, what)
	}
}

// Steady polls read every interval until it returns the same value n
// times in a row, and returns that value; once timeout has passed it
// returns the last value read and false. It is for a figure that settles
// after an event (descriptors closing after connections end), read only
// once it has settled.
func Steady[T comparable](timeout, interval time.Duration, n int, read func() T) (T, bool) {
	last := read()
	same := 1
	ok := Until(timeout, interval, func() bool {
		if same >= n {
			return true
		}
		v := read()
		if v == last {
			same++
		} else {
			last, same = v, 1
		}
		return same >= n
	})
	return last, ok
}

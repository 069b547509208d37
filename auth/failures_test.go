package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// signIn identifies a request from remote that sets its credential.
func signIn(a *Access, remote string, set func(r *http.Request)) (string, error) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	set(r)
	return a.Identify(r)
}

func badToken(r *http.Request)    { r.Header.Set("Authorization", "Bearer not-a-token-of-anyone") }
func alicesGuess(r *http.Request) { r.SetBasicAuth("alice", "a guess") }
func alicesOwn(r *http.Request)   { r.SetBasicAuth("alice", "alice-pw") }

// TestFailuresFromManyAddresses: failures from more than ten thousand
// addresses neither clear the record of a client that is still failing
// nor that of a user whose password was guessed from many addresses.
func TestFailuresFromManyAddresses(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := New(testPolicy(t), func() time.Time { return now })
	const guesser = "192.0.2.1:1000"
	for range failBurst {
		signIn(a, guesser, badToken)
	}
	if _, err := signIn(a, guesser, badToken); !errors.Is(err, ErrTooManyFailures) {
		t.Fatalf("a client after %d failures: %v; want ErrTooManyFailures", failBurst, err)
	}
	// alice's password guessed once from each of ten addresses: her own
	// budget is spent, whatever address tries next, even with her
	// password.
	for i := range failBurst {
		if _, err := signIn(a, fmt.Sprintf("198.51.100.%d:1000", i+1), alicesGuess); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	if _, err := signIn(a, "198.51.100.200:1000", alicesOwn); !errors.Is(err, ErrTooManyFailures) {
		t.Fatalf("alice after %d guesses from as many addresses: %v; want ErrTooManyFailures", failBurst, err)
	}
	// A flood of failures from 10,500 other addresses, the guesser and
	// alice's guessers still trying now and then.
	for i := range 10500 {
		signIn(a, fmt.Sprintf("10.%d.%d.%d:1000", i>>16, i>>8&0xff, i&0xff), badToken)
		if i%1000 != 999 {
			continue
		}
		if _, err := signIn(a, guesser, badToken); !errors.Is(err, ErrTooManyFailures) {
			t.Fatalf("the guesser after %d other addresses failed: %v; want ErrTooManyFailures", i+1, err)
		}
		if _, err := signIn(a, fmt.Sprintf("198.51.100.%d:1000", 100+i/1000), alicesGuess); !errors.Is(err, ErrTooManyFailures) {
			t.Fatalf("a guess of alice's password after %d other addresses failed: %v; want ErrTooManyFailures", i+1, err)
		}
	}
	if n := a.clients.Len(); n > failKeys {
		t.Errorf("%d clients remembered, past the bound of %d", n, failKeys)
	}
	// Their tries come back with time.
	now = now.Add(2 * failEvery)
	if user, err := signIn(a, "198.51.100.200:1000", alicesOwn); user != "alice" || err != nil {
		t.Errorf("alice once her tries are back: %q, %v", user, err)
	}
}

// TestFailuresBySlash64: the addresses of one IPv6 /64 are one client.
func TestFailuresBySlash64(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := New(testPolicy(t), func() time.Time { return now })
	for i := range failBurst {
		if _, err := signIn(a, fmt.Sprintf("[2001:db8:1:2::%x]:1000", i+1), badToken); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	if _, err := signIn(a, "[2001:db8:1:2:ffff:ffff:ffff:ffff]:1000", badToken); !errors.Is(err, ErrTooManyFailures) {
		t.Errorf("another address of the /64: %v; want ErrTooManyFailures", err)
	}
	if _, err := signIn(a, "[2001:db8:1:3::1]:1000", badToken); !errors.Is(err, ErrBadCredential) {
		t.Errorf("an address of another /64: %v; want ErrBadCredential", err)
	}
}

// TestChargeLink: a share link's password is tried no faster than the
// link's budget allows, however many addresses try; a right password
// gives its try back.
func TestChargeLink(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := New(testPolicy(t), func() time.Time { return now })
	from := func(i int) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = fmt.Sprintf("198.51.100.%d:1000", i)
		return r
	}
	right, err := a.ChargeLink(from(1), "link-a")
	if err != nil {
		t.Fatal(err)
	}
	right()
	taken := 0
	for i := range 40 {
		if _, err := a.ChargeLink(from(i+2), "link-a"); err == nil {
			taken++
		} else if !errors.Is(err, ErrTooManyFailures) {
			t.Fatal(err)
		}
	}
	if taken != failBurst {
		t.Errorf("40 wrong passwords from 40 addresses: %d tried; want %d", taken, failBurst)
	}
	if _, err := a.ChargeLink(from(100), "link-b"); err != nil {
		t.Errorf("another link refused: %v", err)
	}
	now = now.Add(failEvery)
	if _, err := a.ChargeLink(from(101), "link-a"); err != nil {
		t.Errorf("a try back after a second refused: %v", err)
	}
}

// TestFailTableLRU: a full table forgets its least recently used record,
// one at a time, and a record whose tries are all back.
func TestFailTableLRU(t *testing.T) {
	now := time.Unix(1e9, 0)
	tb := newFailTable(3)
	for _, k := range []string{"a", "b", "c"} {
		tb.fail(k, now)
	}
	tb.left("a", now) // a is used again: b is now the least recent
	tb.fail("d", now)
	if tb.Len() != 3 {
		t.Fatalf("%d records; want 3", tb.Len())
	}
	for k, want := range map[string]float64{"a": failBurst - 1, "b": failBurst, "c": failBurst - 1, "d": failBurst - 1} {
		if got := tb.left(k, now); got != want {
			t.Errorf("%s has %v tries; want %v", k, got, want)
		}
	}
	now = now.Add(failEvery)
	if tb.left("a", now); tb.Len() != 2 {
		t.Errorf("a record with all its tries back is kept: %d records", tb.Len())
	}
}

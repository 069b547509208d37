package transfer

import (
	"net/http/httptest"
	"testing"
	"time"
)

// TestMakingIsNotTheClients: the time a handler takes before its answer's
// first byte (a huge listing, sorted first) is the server's; a client that
// then takes the body at once is not cut for the minimum rate, and one
// that takes it too slowly from there on still is.
func TestMakingIsNotTheClients(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	opt := Options{MinRate: 1 << 10, IdleTimeout: time.Second, Now: clock.now}
	r := NewResponse(&recorder{ResponseRecorder: *httptest.NewRecorder()}, opt)
	clock.add(2 * time.Minute) // the handler sorts
	for range 4 {
		if _, err := r.Write(make([]byte, 32<<10)); err != nil {
			t.Fatalf("an answer made slowly, then taken at once: %v", err)
		}
		clock.add(10 * time.Millisecond)
	}
	clock.add(3 * time.Minute) // 128 KiB in three minutes: 0.7 KiB/s
	if _, err := r.Write(make([]byte, 10)); err != ErrTooSlow {
		t.Fatalf("a client below the minimum after the answer began: %v; want ErrTooSlow", err)
	}
}

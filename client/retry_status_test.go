package client

import "testing"

// TestRetryableStatus: a status that waiting may change is tried again;
// a full store or a quota (507) is not.
func TestRetryableStatus(t *testing.T) {
	for code, want := range map[int]bool{408: true, 429: true, 500: true, 503: true, 501: false, 505: false, 507: false, 404: false} {
		if got := retryable(&StatusError{Code: code}); got != want {
			t.Errorf("retryable(%d) = %v, want %v", code, got, want)
		}
	}
}

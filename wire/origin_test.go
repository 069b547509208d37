package wire

import (
	"net/http/httptest"
	"testing"
)

// TestSameOrigin: a browser's request from another site is refused
// unless its origin is listed; tools that say nothing pass.
func TestSameOrigin(t *testing.T) {
	listed := []string{"https://app.example"}
	for _, tt := range []struct {
		origin, site string
		ok           bool
	}{
		{"", "", true},
		{"http://127.0.0.1:8080", "same-origin", true},
		{"http://127.0.0.1:8080", "", true},
		{"", "none", true},
		{"https://evil.example", "", false},
		{"", "cross-site", false},
		{"", "same-site", false},
		{"http://127.0.0.1:9090", "", false},
		{"null", "", false},
		{"https://APP.example", "cross-site", true},
	} {
		r := httptest.NewRequest("PUT", "/x", nil)
		r.Host = "127.0.0.1:8080"
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.site != "" {
			r.Header.Set("Sec-Fetch-Site", tt.site)
		}
		if err := SameOrigin(r, listed); (err == nil) != tt.ok || err != nil && err != ErrCrossSite {
			t.Errorf("Origin %q, Sec-Fetch-Site %q: %v; want passed: %v", tt.origin, tt.site, err, tt.ok)
		}
	}
}

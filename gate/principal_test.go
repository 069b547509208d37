package gate

import (
	"context"
	"strings"
	"testing"
)

// TestClientKeys: a request is counted by its address (an IPv6 /64 as
// one) and by its user or share link.
func TestClientKeys(t *testing.T) {
	for _, tt := range []struct {
		remote string
		p      Principal
		want   string
	}{
		{"203.0.113.7:1000", Anonymous(), "203.0.113.7"},
		{"[2001:db8:1:2:3:4:5:6]:1000", Anonymous(), "2001:db8:1:2::/64"},
		{"203.0.113.7:1000", User("alice"), "203.0.113.7 user:alice"},
		{"203.0.113.7:1000", LinkHolder("abc"), "203.0.113.7 link:abc"},
		{"203.0.113.7:1000", Server(), "203.0.113.7"},
	} {
		if got := strings.Join(ClientKeys(With(context.Background(), tt.p), tt.remote), " "); got != tt.want {
			t.Errorf("%s as %s: keys %q; want %q", tt.remote, tt.p, got, tt.want)
		}
	}
	if got := strings.Join(ClientKeys(context.Background(), "203.0.113.7:1000"), " "); got != "203.0.113.7" {
		t.Errorf("without a principal: keys %q", got)
	}
}

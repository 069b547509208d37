package auth

import (
	"strings"
	"testing"
)

// TestRedirected checks which downloads the rules send to presigned URLs:
// those the rule that decides says so for, by the same precedence as the
// permissions (the longest path; at one path, a user's rule before a
// group's before everyone's).
func TestRedirected(t *testing.T) {
	p, err := loadText(t, `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
groups = ["staff"]

[[user]]
name = "bob"
tokens = ["bob-token-0123456789ab"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/videos"
users = ["*"]
allow = ["read"]
redirect = "presigned"

[[rule]]
path = "/videos"
users = ["alice"]
allow = ["read"]

[[rule]]
path = "/videos/staff"
users = ["group:staff"]
allow = ["read"]
redirect = "presigned"
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		user, name string
		want       bool
	}{
		{"", "videos/a.mp4", true},
		{"bob", "videos/a.mp4", true},
		{"alice", "videos/a.mp4", false}, // her own rule at the path decides
		{"", "docs/a.pdf", false},
		{"", "videos", true},
		{"alice", "videos/staff/b.mp4", true},
		{"bob", "videos/staff/b.mp4", true}, // everyone's rule at /videos decides for bob
	} {
		if got := p.Redirected(tt.user, tt.name); got != tt.want {
			t.Errorf("Redirected(%q, %q) = %v, want %v", tt.user, tt.name, got, tt.want)
		}
	}
	if got := strings.Join(p.Redirecting(), "; "); got != "/videos: *; /videos/staff: group:staff" {
		t.Errorf("Redirecting() = %q", got)
	}
}

// TestRedirectErrors checks the mistakes of a rule's redirect.
func TestRedirectErrors(t *testing.T) {
	for _, tt := range []struct{ rule, want string }{
		{`redirect = "s3"`, `redirect = "s3": "presigned" or none`},
		{`redirect = "presigned"` + "\nallow = [\"list\"]", "grants no read"},
	} {
		text := "[[rule]]\npath = \"/v\"\nusers = [\"*\"]\n" + tt.rule + "\n"
		if !strings.Contains(tt.rule, "allow") {
			text += "allow = [\"read\"]\n"
		}
		if _, err := loadText(t, text); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.rule, err, tt.want)
		}
	}
}

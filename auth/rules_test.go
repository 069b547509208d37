package auth

import "testing"

func TestAllowedBelow(t *testing.T) {
	rs := Rules{
		{Path: "", Users: []string{Everyone}, Allow: Read | List},
		{Path: "", Users: []string{"carol"}, Allow: All},
		{Path: "m/secret", Users: []string{Everyone}, Allow: Read | List},
		{Path: "m/secretive", Users: []string{"dave"}, Allow: All},
		{Path: "p", Users: []string{"bob"}, Allow: All},
		{Path: "p/keep", Users: []string{"bob"}, Allow: Read | List | Write},
	}
	tests := []struct {
		user, name string
		want       Perm
	}{
		{"carol", "m/other", All},            // nothing below restricts
		{"carol", "m/secret/x", Read | List}, // inside the restricted folder
		{"carol", "m", Read | List},          // a rule below takes delete and write away
		{"carol", "", Read | List},           // so does it for the root
		{"carol", "m/secre", All},            // a name that is only a prefix of the rule's path
		{"bob", "p", Read | List | Write},    // bob may not delete p/keep, so not p
		{"bob", "p/other", All},              // a sibling of p/keep
		{"dave", "m", Read | List},           // dave's rule below grants more, never less
		{"", "m", Read | List},               // anonymous
		{"bob", "m/secretive", Read | List},  // a rule for another user changes nothing
		{"carol", "m/secret", Read | List},   // the rule's own path
	}
	for _, tt := range tests {
		if got := rs.AllowedBelow(tt.user, tt.name); got != tt.want {
			t.Errorf("AllowedBelow(%q, %q) = %v; want %v", tt.user, tt.name, got, tt.want)
		}
	}
}

// TestGrantedAt: only the rules whose path is the name count, by the
// same ranks as Allowed; a rule on a folder above gives nothing.
func TestGrantedAt(t *testing.T) {
	p, err := LoadFile(writeFile(t, `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = ["all"]

[[rule]]
path = "/_largo/metrics"
users = ["alice"]
allow = ["read"]

[[rule]]
path = "/_largo/metrics"
users = ["*"]
allow = []
`))
	if err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]Perm{"alice": Read, "bob": 0, "": 0} {
		if got := p.GrantedAt(user, "_largo/metrics"); got != want {
			t.Errorf("GrantedAt(%q, metrics) = %v; want %v", user, got, want)
		}
	}
	if got := p.GrantedAt("bob", "_largo/healthz"); got != 0 {
		t.Errorf("a name without a rule of its own: %v; want none", got)
	}
}

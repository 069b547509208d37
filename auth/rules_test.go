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

package auth

import (
	"strings"
	"testing"
)

// TestUserRate: a user's rate in the access file, any size, or "0" for
// none; a user without one takes the server's default.
func TestUserRate(t *testing.T) {
	p, err := LoadFile(writeFile(t, `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
rate = "10MB"

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[user]]
name = "carol"
tokens = ["carol-token-0123456789"]
rate = "0"

[[user]]
name = "dave"
tokens = ["dave-token-0123456789"]
rate = "1.5 MiB"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		user string
		rate int64
		ok   bool
	}{
		{"alice", 10e6, true},
		{"bob", 0, false},
		{"carol", 0, true},
		{"dave", 3 << 19, true},
		{"nobody", 0, false},
		{"", 0, false},
	} {
		if rate, ok := p.Rate(tt.user); rate != tt.rate || ok != tt.ok {
			t.Errorf("Rate(%q) = %d, %v; want %d, %v", tt.user, rate, ok, tt.rate, tt.ok)
		}
	}
	if rate, ok := OneUser("a-token-0123456789", false).Rate("token"); rate != 0 || ok {
		t.Errorf("the one-user policy gives its user a rate: %d, %v", rate, ok)
	}
}

func TestUserRateErrors(t *testing.T) {
	for _, rate := range []string{`"fast"`, `"-1MB"`, `""`, `10`} {
		_, err := LoadFile(writeFile(t, `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
rate = `+rate))
		if err == nil {
			t.Errorf("rate = %s accepted", rate)
			continue
		}
		if !strings.Contains(err.Error(), "rate") {
			t.Errorf("rate = %s: the error %q does not name the rate", rate, err)
		}
	}
}

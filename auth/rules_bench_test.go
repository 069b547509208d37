package auth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchPolicy is an access file of 20 rules (a few name groups when
// groups is true) and two users.
func benchPolicy(b *testing.B, groups bool) *Policy {
	b.Helper()
	var f strings.Builder
	f.WriteString("[[user]]\nname = \"alice\"\ntokens = [\"alice-token-0123456789\"]\ngroups = [\"staff\"]\n\n")
	f.WriteString("[[user]]\nname = \"bob\"\ntokens = [\"bob-token-0123456789ab\"]\n\n")
	f.WriteString("[[rule]]\npath = \"/\"\nusers = [\"*\"]\nallow = [\"read\", \"list\"]\n\n")
	for i := range 19 {
		users := `"bob"`
		if groups && i%4 == 0 {
			users = `"group:staff"`
		}
		fmt.Fprintf(&f, "[[rule]]\npath = \"/d%d/sub\"\nusers = [%s]\nallow = [\"all\"]\n\n", i, users)
	}
	path := filepath.Join(b.TempDir(), "access.toml")
	if err := os.WriteFile(path, []byte(f.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	p, err := LoadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return New(p, nil).Policy()
}

// BenchmarkAllowed: one decision under 20 rules, as the gate asks it for
// every store call, with and without rules that name groups.
func BenchmarkAllowed(b *testing.B) {
	for _, groups := range []bool{false, true} {
		p := benchPolicy(b, groups)
		for _, user := range []string{"", "alice"} {
			b.Run(fmt.Sprintf("groups=%v/user=%q", groups, user), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.Allowed(user, "d8/sub/folder/file.txt")
				}
			})
		}
	}
}

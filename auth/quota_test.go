package auth

import (
	"fmt"
	"strings"
	"testing"
)

// TestQuotas: a user's quota and quota_files, "0" for none, and the
// quotas of paths.
func TestQuotas(t *testing.T) {
	p, err := LoadFile(writeFile(t, `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "10GB"
quota_files = 1000

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[user]]
name = "carol"
tokens = ["carol-token-0123456789"]
quota = "0"

[[quota]]
path = "/projects"
bytes = "1MB"

[[quota]]
path = "/projects/big/"
files = 3
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		user string
		q    Quota
		ok   bool
	}{
		{"alice", Quota{Bytes: 10e9, Files: 1000}, true},
		{"bob", Quota{}, false},
		{"carol", Quota{}, true},
		{"nobody", Quota{}, false},
	} {
		if q, ok := p.UserQuota(tt.user); q != tt.q || ok != tt.ok {
			t.Errorf("UserQuota(%q) = %+v, %v; want %+v, %v", tt.user, q, ok, tt.q, tt.ok)
		}
	}
	want := []Quota{{Path: "projects", Bytes: 1e6}, {Path: "projects/big", Files: 3}}
	got := p.PathQuotas()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("PathQuotas() = %+v, want %+v", got, want)
	}
	if got := p.QuotaUsers(); fmt.Sprint(got) != "[alice carol]" {
		t.Errorf("QuotaUsers() = %v, want [alice carol]", got)
	}
	if !p.HasQuotas() || OneUser("a-token-0123456789", false).HasQuotas() {
		t.Error("HasQuotas is wrong")
	}
}

func TestQuotaErrors(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"[[user]]\nname = \"a\"\ntokens = [\"alice-token-0123456789\"]\nquota = \"lots\"", "quota"},
		{"[[user]]\nname = \"a\"\ntokens = [\"alice-token-0123456789\"]\nquota_files = -1", "quota_files"},
		{"[[quota]]\npath = \"/p\"", "give bytes, files or both"},
		{"[[quota]]\nbytes = \"1GB\"", "path"},
		{"[[quota]]\npath = \"/p\"\nbytes = \"-1\"", "bytes"},
		{"[[quota]]\npath = \"/p\"\nfiles = -2", "files"},
		{"[[quota]]\npath = \"/p\"\nfiles = 2\n[[quota]]\npath = \"p/\"\nfiles = 3", "twice"},
		{"[[quota]]\npath = \"/p\"\nfiles = 2\nsize = 3", "unknown key"},
	} {
		_, err := LoadFile(writeFile(t, tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one that says %q", tt.file, err, tt.want)
		}
	}
}

package auth

import (
	"slices"
	"testing"
)

// explainFile: everyone reads and lists, but not /private (alice, and
// the group admins, whom carol is in) nor /backups (written by a bot,
// read by nobody else); anonymous visitors do not see /members; bob may
// not see /pub/secret.
const explainFile = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[user]]
name = "bob"
tokens = ["bob-token-01234567890"]

[[user]]
name = "carol"
tokens = ["carol-token-0123456789"]
groups = ["admins"]

[[user]]
name = "backup-bot"
tokens = ["bot-token-012345678901"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["*"]
allow = []

[[rule]]
path = "/private"
users = ["alice", "group:admins"]
allow = ["all"]

[[rule]]
path = "/backups"
users = ["*"]
allow = []

[[rule]]
path = "/backups"
users = ["backup-bot"]
allow = ["write"]

[[rule]]
path = "/members"
users = ["anonymous"]
allow = []

[[rule]]
path = "/pub/secret"
users = ["bob"]
allow = []
`

func TestExplain(t *testing.T) {
	p, err := LoadFile(writeFile(t, explainFile))
	if err != nil {
		t.Fatal(err)
	}
	see := Read | List
	for _, tt := range []struct {
		path string
		want Who
	}{
		{"", Who{Anonymous: true, SignedIn: true}},
		{"pub", Who{Anonymous: true, SignedIn: true}},
		{"pub/secret/x", Who{Anonymous: true, SignedIn: true, Except: []string{"bob"}}},
		{"members", Who{SignedIn: true}},
		{"private", Who{Names: []string{"alice", "carol", "group:admins"}}},
		{"private/deep", Who{Names: []string{"alice", "carol", "group:admins"}}},
		{"backups", Who{}},
	} {
		got := p.Explain(tt.path).Who(see)
		if got.Anonymous != tt.want.Anonymous || got.SignedIn != tt.want.SignedIn || !slices.Equal(got.Names, tt.want.Names) || !slices.Equal(got.Except, tt.want.Except) {
			t.Errorf("who sees /%s: %+v; want %+v", tt.path, got, tt.want)
		}
	}
	// Each permission on its own.
	e := p.Explain("backups")
	if w := e.Who(Write); !slices.Equal(w.Names, []string{"backup-bot"}) || w.SignedIn || w.Anonymous {
		t.Errorf("who writes /backups: %+v", w)
	}
	if e.Anonymous != 0 || e.SignedIn != 0 || len(e.Named) != 1 || e.Named[0] != (Grant{Who: "backup-bot", Perm: Write}) {
		t.Errorf("explanation of /backups: %+v", e)
	}
	if w := p.Explain("private").Who(Delete); !slices.Equal(w.Names, []string{"alice", "carol", "group:admins"}) {
		t.Errorf("who deletes in /private: %+v", w)
	}
}

// TestExplainOneUser: the one-user flags' policies.
func TestExplainOneUser(t *testing.T) {
	if p := OneUser("a-token", false); !p.Nameless("token") || p.Nameless("alice") {
		t.Error("the one-user token's holder is not told apart")
	}
	if p, err := LoadFile(writeFile(t, explainFile)); err != nil || p.Nameless("alice") || p.Nameless("token") {
		t.Errorf("an access file's user is nameless (%v)", err)
	}
	if w := OneUser("a-token", false).Explain("x").Who(Read | List); !w.Anonymous || !w.SignedIn || len(w.Except) != 0 {
		t.Errorf("--token: who sees: %+v", w)
	}
	if w := OneUser("a-token", false).Explain("x").Who(Write); w.Anonymous || w.SignedIn || !slices.Equal(w.Names, []string{"token"}) {
		t.Errorf("--token: who writes: %+v", w)
	}
	if w := OneUser("", true).Explain("x").Who(Delete); !w.Anonymous || !w.SignedIn {
		t.Errorf("--upload-open: who deletes: %+v", w)
	}
}

// TestExplainAgrees: what an explanation says of anonymous and of each
// user is what the policy decides for them (Allowed), and, for one of the
// server's own routes, what its own rules alone give (GrantedAt): a rule
// that opens "/" to everyone does not open /_largo/metrics.
func TestExplainAgrees(t *testing.T) {
	p, err := LoadFile(writeFile(t, explainFile+`
[[rule]]
path = "/_largo/metrics"
users = ["backup-bot"]
allow = ["read"]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"", "pub", "pub/secret/x", "members", "private/deep", "backups", "_largo/metrics"} {
		allowed := p.Allowed
		if path == "_largo/metrics" {
			allowed = p.GrantedAt
		}
		e := p.Explain(path)
		if e.Anonymous != allowed("", path) {
			t.Errorf("/%s: anonymous %v; the policy says %v", path, e.Anonymous, allowed("", path))
		}
		for _, u := range p.UserNames() {
			if got, want := e.User(u), allowed(u, path); got != want {
				t.Errorf("/%s: %s %v; the policy says %v", path, u, got, want)
			}
		}
	}
	if w := p.Explain("_largo/metrics").Who(Read); w.Anonymous || w.SignedIn || !slices.Equal(w.Names, []string{"backup-bot"}) {
		t.Errorf("who reads /_largo/metrics: %+v", w)
	}
}

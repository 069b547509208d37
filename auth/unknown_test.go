package auth

import (
	"fmt"
	"strings"
	"testing"
)

// restrictedGroups is an access file whose rules restrict a group a
// trusted proxy names (contractors: nothing on /private) and grant one
// (staff: everything on /team).
const restrictedGroups = `
[[user]]
name = "carl"
tokens = ["carl-token-0123456789"]

[[user]]
name = "ann"
tokens = ["ann-token-0123456789"]
groups = ["staff"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["group:contractors"]
allow = []

[[rule]]
path = "/team"
users = ["group:staff"]
allow = ["all"]

[[rule]]
path = "/own"
users = ["carl"]
allow = ["all"]

[proxy]
`

// proxyGroupsAccess returns an Access of restrictedGroups whose users'
// groups a trusted proxy names, and the policy it was made of.
func proxyGroupsAccess(t *testing.T) (*Access, *Policy) {
	t.Helper()
	pol, err := LoadFile(writeFile(t, restrictedGroups))
	if err != nil {
		t.Fatal(err)
	}
	a := New(pol, nil)
	a.GroupsFromProxy()
	return a, pol
}

// TestUnknownProxyGroups: when a trusted proxy names its users' groups,
// a user whose groups it has not named yet (a server just started, a
// request by token or through a link of theirs) is judged by the least
// any groups could give them: a rule that restricts a group applies, one
// that grants a group does not; their own rules and the access file's
// groups still count. Once the proxy names their groups, those decide.
func TestUnknownProxyGroups(t *testing.T) {
	a, pol := proxyGroupsAccess(t)
	p := a.Policy()
	for _, tt := range []struct {
		user, name string
		want       Perm
	}{
		{"carl", "private/s.txt", 0},
		{"carl", "private", 0},
		{"carl", "pub.txt", Read | List},
		{"carl", "team/x", Read | List},
		{"carl", "own/x", All},
		{"ann", "team/x", All}, // the access file's group
		{"ann", "private/s.txt", 0},
		{"", "private/s.txt", Read | List}, // anonymous has no groups to know
	} {
		if got := p.Allowed(tt.user, tt.name); got != tt.want {
			t.Errorf("Allowed(%q, %q) with the proxy's groups unknown = %v; want %v", tt.user, tt.name, got, tt.want)
		}
	}
	if got := p.AllowedBelow("carl", ""); got != 0 {
		t.Errorf("AllowedBelow(carl, root) with groups unknown = %v; want none (/private)", got)
	}
	if p.ReadsAll("carl") {
		t.Error("carl, groups unknown, reads everything: /private is restricted")
	}

	proxies := mustProxies(t, ProxyConfig{User: "Remote-User", Groups: "Remote-Groups"})
	if user, err := a.Identify(fromProxy(proxies, "Remote-User", "carl")); user != "carl" || err != nil {
		t.Fatalf("carl through the proxy: %q, %v", user, err)
	}
	if got := p.Allowed("carl", "private/s.txt"); got != Read|List {
		t.Errorf("carl, in no group by the proxy: %v on /private; want read,list", got)
	}
	if !p.ReadsAll("carl") {
		t.Error("carl, in no group by the proxy, does not read everything")
	}
	a.Identify(fromProxy(proxies, "Remote-User", "carl", "Remote-Groups", "contractors"))
	if got := p.Allowed("carl", "private/s.txt"); got != 0 {
		t.Errorf("carl, a contractor by the proxy: %v on /private; want none", got)
	}

	// A server whose proxy names no groups judges by the access file's.
	b := New(pol, nil)
	if got := b.Policy().Allowed("carl", "private/s.txt"); got != Read|List {
		t.Errorf("no groups from a proxy: carl has %v on /private; want read,list", got)
	}
}

// TestPartialProxyGroups: a proxy that names more groups than are kept
// leaves the others unknown: a restricting rule of a group past the
// bound still applies, while the groups kept count as named.
func TestPartialProxyGroups(t *testing.T) {
	a, _ := proxyGroupsAccess(t)
	var many []string
	for i := range maxProxyGroup {
		many = append(many, fmt.Sprintf("g%02d", i))
	}
	many = append(many, "staff", "contractors") // past the bound: dropped
	proxies := mustProxies(t, ProxyConfig{User: "Remote-User", Groups: "Remote-Groups"})
	a.Identify(fromProxy(proxies, "Remote-User", "carl", "Remote-Groups", strings.Join(many, ",")))
	if got := a.Policy().Allowed("carl", "private/s.txt"); got != 0 {
		t.Errorf("carl, named in more groups than are kept: %v on /private; want none", got)
	}
	a.Identify(fromProxy(proxies, "Remote-User", "carl", "Remote-Groups", strings.Join(many[:maxProxyGroup], ",")))
	if got := a.Policy().Allowed("carl", "private/s.txt"); got != Read|List {
		t.Errorf("carl, named in all his groups: %v on /private; want read,list", got)
	}
}

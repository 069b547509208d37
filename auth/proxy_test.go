package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustProxies(t testing.TB, cfg ProxyConfig) *Proxies {
	t.Helper()
	if cfg.Trusted == nil {
		cfg.Trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	p, err := NewProxies(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestResolveAddress: the client's address is read from the right of the
// field the proxy appends to, through trusted hops, and only when the
// peer is a trusted proxy.
func TestResolveAddress(t *testing.T) {
	xff := mustProxies(t, ProxyConfig{})
	fwd := mustProxies(t, ProxyConfig{Forwarded: "forwarded"})
	for _, tt := range []struct {
		name   string
		p      *Proxies
		peer   string
		fields map[string][]string
		want   string
	}{
		{"untrusted peer", xff, "192.0.2.9:1000", map[string][]string{"X-Forwarded-For": {"203.0.113.1"}}, "192.0.2.9:1000"},
		{"no field", xff, "10.0.0.1:1000", nil, "10.0.0.1:1000"},
		{"one hop", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"203.0.113.1"}}, "203.0.113.1:0"},
		{"client's own entry left of the proxy's", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"198.51.100.66, 203.0.113.1"}}, "203.0.113.1:0"},
		{"trusted hops walked through", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"198.51.100.66,203.0.113.1, 10.9.9.9 ,10.0.0.2"}}, "203.0.113.1:0"},
		{"every hop trusted: the leftmost", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"10.0.0.3, 10.0.0.2"}}, "10.0.0.3:0"},
		{"lines read as one list", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"198.51.100.66", "203.0.113.1, 10.0.0.2"}}, "203.0.113.1:0"},
		{"a port", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"203.0.113.1:4711"}}, "203.0.113.1:4711"},
		{"IPv6", xff, "[::1]:1000", map[string][]string{"X-Forwarded-For": {"2001:db8::7"}}, "[2001:db8::7]:0"},
		{"IPv6 bracketed with a port", xff, "[::1]:1000", map[string][]string{"X-Forwarded-For": {"[2001:db8::7]:99"}}, "[2001:db8::7]:99"},
		{"IPv4 in IPv6", xff, "[::ffff:10.0.0.1]:1000", map[string][]string{"X-Forwarded-For": {"::ffff:203.0.113.1"}}, "203.0.113.1:0"},
		{"garbage nearest: the proxy", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"198.51.100.66, nonsense"}}, "10.0.0.1:1000"},
		{"garbage behind a trusted hop", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {"198.51.100.66, unknown, 10.0.0.2"}}, "10.0.0.2:0"},
		{"empty elements", xff, "10.0.0.1:1000", map[string][]string{"X-Forwarded-For": {" , 203.0.113.1,,"}}, "203.0.113.1:0"},
		{"the other field is not read", xff, "10.0.0.1:1000", map[string][]string{"Forwarded": {"for=203.0.113.1"}}, "10.0.0.1:1000"},
		{"Forwarded", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {"for=198.51.100.66;proto=https, for=203.0.113.1;by=10.0.0.1"}}, "203.0.113.1:0"},
		{"Forwarded, for after other pairs", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {`proto=https;host="a,b";for=203.0.113.1`}}, "203.0.113.1:0"},
		{"Forwarded IPv6 with a port", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {`for="[2001:db8:cafe::17]:4711"`}}, "[2001:db8:cafe::17]:4711"},
		{"Forwarded, case and blanks", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {` For = "203.0.113.1" ; Proto=http`}}, "203.0.113.1:0"},
		{"Forwarded unknown", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {"for=198.51.100.66, for=unknown"}}, "10.0.0.1:1000"},
		{"Forwarded obfuscated behind trusted", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {"for=_hidden, for=10.0.0.5"}}, "10.0.0.5:0"},
		{"Forwarded element without for", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {"for=198.51.100.66, proto=https"}}, "10.0.0.1:1000"},
		{"Forwarded comma in a quoted string", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {`for=198.51.100.66;host="x,for=10.0.0.9", for=203.0.113.1`}}, "203.0.113.1:0"},
		{"Forwarded unclosed quote", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {`for=198.51.100.66, for="203.0.113.1`}}, "10.0.0.1:1000"},
		{"Forwarded lines", fwd, "10.0.0.1:1000", map[string][]string{"Forwarded": {"for=198.51.100.66", "for=203.0.113.1"}}, "203.0.113.1:0"},
		{"a peer without a port", xff, "10.0.0.1", map[string][]string{"X-Forwarded-For": {"203.0.113.1"}}, "10.0.0.1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.peer
		for k, v := range tt.fields {
			r.Header[k] = v
		}
		if got := tt.p.Resolve(r).RemoteAddr; got != tt.want {
			t.Errorf("%s: client %q; want %q", tt.name, got, tt.want)
		}
		if r.RemoteAddr != tt.peer {
			t.Errorf("%s: the request given was changed", tt.name)
		}
	}
}

// TestUntrustedPeer: a client that is no trusted proxy, sending the
// proxies' fields and a user, gets neither its address nor its user
// taken, and no handler sees the fields.
func TestUntrustedPeer(t *testing.T) {
	p := mustProxies(t, ProxyConfig{User: "Remote-User", Groups: "Remote-Groups"})
	a := New(proxyPolicy(t, ""), nil)
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.9:1000"
	for _, f := range []string{"X-Forwarded-For", "Forwarded", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-IP", "Remote-User", "Remote-Groups"} {
		r.Header.Set(f, "alice")
	}
	r.Header.Set("X-Forwarded-For", "10.0.0.1")
	r.Header.Set("Forwarded", "for=10.0.0.1")
	got := p.Resolve(r)
	if got.RemoteAddr != "192.0.2.9:1000" {
		t.Errorf("client %q", got.RemoteAddr)
	}
	for f := range got.Header {
		if f != "Authorization" {
			t.Errorf("%s reached the handler", f)
		}
	}
	if r.Header.Get("Remote-User") != "alice" {
		t.Error("the request given was changed")
	}
	if _, ok := Proxy(got); ok {
		t.Error("came through a proxy")
	}
	if user, err := a.Identify(got); user != "" || err != nil {
		t.Errorf("Identify: %q, %v; want anonymous", user, err)
	}
	// Even unresolved (a handler without Proxies in front), the user's
	// field is nobody's credential.
	if user, err := a.Identify(r); user != "" || err != nil {
		t.Errorf("Identify of the raw request: %q, %v; want anonymous", user, err)
	}
	plain := httptest.NewRequest("GET", "/", nil)
	plain.RemoteAddr = "192.0.2.9:1000"
	if p.Resolve(plain) != plain {
		t.Error("a request without those fields was copied")
	}
}

// proxyPolicy is an access file for a proxy in front: alice and bob
// listed (bob with a token, alice with none: she signs in only through
// the proxy), rules for groups, and proxy users = users.
func proxyPolicy(t *testing.T, users string) *Policy {
	t.Helper()
	proxy := "[proxy]\n"
	if users != "" {
		proxy += fmt.Sprintf("users = %q\n", users)
	}
	p, err := LoadFile(writeFile(t, fmt.Sprintf(`
[[user]]
name = "alice"

[[user]]
name = "bob"
tokens = [%q]
groups = ["staff"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/team"
users = ["group:staff"]
allow = ["read", "list", "write"]

[[rule]]
path = "/team"
users = ["group:admins"]
allow = ["delete"]

[[rule]]
path = "/team/locked"
users = ["*"]
allow = []

[[rule]]
path = "/team/locked"
users = ["group:admins"]
allow = ["all"]

[[rule]]
path = "/team/locked"
users = ["bob"]
allow = ["read"]

[[rule]]
path = "/admin"
users = ["group:admins"]
allow = ["all"]

%s`, tokenBob, proxy)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fromProxy is a request from the trusted proxy 10.0.0.1 for client
// 203.0.113.1, with fields set.
func fromProxy(p *Proxies, fields ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.1:1000"
	r.Header.Set("X-Forwarded-For", "203.0.113.1")
	for i := 0; i+1 < len(fields); i += 2 {
		r.Header.Add(fields[i], fields[i+1])
	}
	return p.Resolve(r)
}

// TestProxyIdentify: a user a trusted proxy names is signed in without a
// password, whatever Authorization says; a name the policy does not know
// is refused; an absent name leaves the credentials to decide.
func TestProxyIdentify(t *testing.T) {
	p := mustProxies(t, ProxyConfig{User: "remote-user", Groups: "remote-groups"})
	listed := New(proxyPolicy(t, ""), nil)
	anyone := New(proxyPolicy(t, "any"), nil)
	for _, tt := range []struct {
		name   string
		a      *Access
		fields []string
		user   string
		err    error
	}{
		{"listed user", listed, []string{"Remote-User", "alice"}, "alice", nil},
		{"blanks around", listed, []string{"Remote-User", " alice "}, "alice", nil},
		{"wrong password ignored", listed, []string{"Remote-User", "alice", "Authorization", "Basic Ym9iOm5vcGU="}, "alice", nil},
		{"another user's token ignored", listed, []string{"Remote-User", "alice", "Authorization", "Bearer " + tokenBob}, "alice", nil},
		{"unlisted", listed, []string{"Remote-User", "mallory"}, "", ErrNotAUser},
		{"unlisted, any", anyone, []string{"Remote-User", "mallory"}, "mallory", nil},
		{"anonymous is nobody's name", anyone, []string{"Remote-User", "anonymous"}, "", ErrNotAUser},
		{"everyone is nobody's name", anyone, []string{"Remote-User", "*"}, "", ErrNotAUser},
		{"a colon", anyone, []string{"Remote-User", "group:admins"}, "", ErrNotAUser},
		{"a control character", anyone, []string{"Remote-User", "a\x01b"}, "", ErrNotAUser},
		{"too long", anyone, []string{"Remote-User", strings.Repeat("a", 300)}, "", ErrNotAUser},
		{"no name: the credential", listed, []string{"Authorization", "Bearer " + tokenBob}, "bob", nil},
		{"no name, a wrong credential", listed, []string{"Authorization", "Bearer nope-nope-nope-nope"}, "", ErrBadCredential},
		{"no name, no credential", listed, nil, "", nil},
		{"an empty name", listed, []string{"Remote-User", ""}, "", nil},
	} {
		user, err := tt.a.Identify(fromProxy(p, tt.fields...))
		if user != tt.user || !errors.Is(err, tt.err) {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, user, err, tt.user, tt.err)
		}
	}
	// The proxy's user needs a user's field configured.
	noUser := mustProxies(t, ProxyConfig{})
	if user, err := listed.Identify(fromProxy(noUser, "Remote-User", "alice")); user != "" || err != nil {
		t.Errorf("no user's field configured: %q, %v", user, err)
	}
}

// TestGroupRules: rules that name groups apply to the groups the access
// file and the proxy put a user in; at one path a user's rule beats a
// group's, which beats everyone's, and the rules of several groups add
// up. The groups a proxy names are the user's from its request on, and
// survive a reload.
func TestGroupRules(t *testing.T) {
	p := mustProxies(t, ProxyConfig{User: "Remote-User", Groups: "Remote-Groups"})
	a := New(proxyPolicy(t, "any"), nil)
	allowed := func(user, name string) Perm { return a.Policy().Allowed(user, name) }
	sign := func(user string, groups ...string) {
		t.Helper()
		f := []string{"Remote-User", user}
		for _, g := range groups {
			f = append(f, "Remote-Groups", g)
		}
		if got, err := a.Identify(fromProxy(p, f...)); got != user || err != nil {
			t.Fatalf("sign-in of %s: %q, %v", user, got, err)
		}
	}
	if got := allowed("bob", "team/x"); got != Read|List|Write {
		t.Errorf("bob (staff in the file) on team: %v", got)
	}
	if got := allowed("alice", "team/x"); got != Read|List {
		t.Errorf("alice before the proxy named her groups: %v", got)
	}
	sign("alice", "admins, staff")
	if got := allowed("alice", "team/x"); got != All {
		t.Errorf("alice, admins and staff, on team (two groups at one path add up): %v", got)
	}
	if got := allowed("alice", "team/locked/f"); got != All {
		t.Errorf("alice on team/locked (a group beats everyone): %v", got)
	}
	if got := a.Policy().AllowedBelow("alice", "team"); got != All {
		t.Errorf("alice below team: %v", got)
	}
	sign("bob", "admins")
	if got := allowed("bob", "team/locked/f"); got != Read {
		t.Errorf("bob, an admin, on team/locked (his own rule beats the group's): %v", got)
	}
	if got := allowed("bob", "admin/f"); got != All {
		t.Errorf("bob, an admin by the proxy: %v", got)
	}
	sign("carol", "admins|staff")
	if got := allowed("carol", "admin/f"); got != All {
		t.Errorf("carol, unlisted, groups separated by bars: %v", got)
	}
	// A reload keeps the groups the proxy named.
	a.Reload(proxyPolicy(t, "any"))
	if got := allowed("carol", "admin/f"); got != All {
		t.Errorf("carol after a reload: %v", got)
	}
	// The proxy's next word is the user's groups: none now.
	sign("carol")
	if got := allowed("carol", "admin/f"); got != Read|List {
		t.Errorf("carol, no longer an admin: %v", got)
	}
	// Names no group may have are dropped.
	sign("dave", "adm:ins", "admins")
	if got, _ := a.members.of("dave"); !slices.Equal(got, []string{"admins"}) {
		t.Errorf("dave's groups: %q", got)
	}
	// Without a groups' field, the proxy changes no one's groups.
	noGroups := mustProxies(t, ProxyConfig{User: "Remote-User"})
	if _, err := a.Identify(fromProxy(noGroups, "Remote-User", "dave", "Remote-Groups", "staff")); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.members.of("dave"); !slices.Equal(got, []string{"admins"}) {
		t.Errorf("dave's groups after a request without a groups' field: %q", got)
	}
	// A policy asked outside an Access knows only the file's groups.
	if got := proxyPolicy(t, "").Allowed("alice", "admin/f"); got != Read|List {
		t.Errorf("alice in a policy of no Access: %v", got)
	}
}

// TestProxyFailures: failed credentials count against the client the
// proxy names, not the proxy: one client that fails too often leaves
// the others behind the same proxy alone.
func TestProxyFailures(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := New(testPolicy(t), func() time.Time { return now })
	p := mustProxies(t, ProxyConfig{})
	req := func(client, token string) (string, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:1000"
		r.Header.Set("X-Forwarded-For", client)
		r.Header.Set("Authorization", "Bearer "+token)
		return a.Identify(p.Resolve(r))
	}
	for range failBurst {
		req("203.0.113.1", "wrong-wrong-wrong-wrong")
	}
	if _, err := req("203.0.113.1", tokenBob); !errors.Is(err, ErrTooManyFailures) {
		t.Errorf("the failing client: %v; want ErrTooManyFailures", err)
	}
	if user, err := req("203.0.113.2", tokenBob); user != "bob" || err != nil {
		t.Errorf("another client behind the proxy: %q, %v", user, err)
	}
}

func TestNewProxiesErrors(t *testing.T) {
	for _, cfg := range []ProxyConfig{
		{Forwarded: "X-Real-IP"},
		{User: "Remote User"},
		{User: "Authorization"},
		{User: "x-forwarded-for"},
		{Groups: "Remote-Groups"},
		{User: "Remote-User", Groups: "remote-user"},
	} {
		if _, err := NewProxies(cfg); err == nil {
			t.Errorf("accepted %+v", cfg)
		}
	}
}

// TestProxyAccessFile: the access file's proxy table, and what it allows
// and refuses.
func TestProxyAccessFile(t *testing.T) {
	for _, text := range []string{
		"[proxy]\nusers = \"some\"",
		"[[user]]\nname = \"x\"\ngroups = [\"a,b\"]\n[proxy]",
		"[[rule]]\npath = \"/\"\nusers = [\"group:\"]\nallow = [\"read\"]",
		"[[rule]]\npath = \"/\"\nusers = [\"nobody\"]\nallow = [\"read\"]\n[proxy]",
	} {
		if _, err := LoadFile(writeFile(t, text)); err == nil {
			t.Errorf("accepted:\n%s", text)
		}
	}
	p, err := LoadFile(writeFile(t, "[[rule]]\npath = \"/\"\nusers = [\"nobody\"]\nallow = [\"read\"]\n[proxy]\nusers = \"any\""))
	if err != nil {
		t.Fatalf("a rule for an unlisted user, any: %v", err)
	}
	if !p.Knows("nobody") || p.Knows("a:b") || !p.AnyProxyUser() {
		t.Error("Knows or AnyProxyUser, any")
	}
	if q := proxyPolicy(t, ""); q.Knows("nobody") || !q.Knows("alice") || q.ProxyOnly() != 1 || q.AnyProxyUser() {
		t.Error("Knows, ProxyOnly or AnyProxyUser, listed")
	}
}

// FuzzResolve: any forwarded field from a trusted proxy gives, without a
// panic, either the proxy's address or an address the field names.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"203.0.113.1", "198.51.100.66, 203.0.113.1", "[2001:db8::1]:80", "unknown",
		`for=203.0.113.1;proto=https, for="[2001:db8::1]:4711"`, `for="a\"b", for=_x`, `;;,,for=`, `for="`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	xff := mustProxies(f, ProxyConfig{})
	fwd := mustProxies(f, ProxyConfig{Forwarded: Forwarded})
	f.Fuzz(func(t *testing.T, field string, forwarded bool) {
		p, name := xff, XForwardedFor
		if forwarded {
			p, name = fwd, Forwarded
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:1000"
		r.Header.Set(name, field)
		got := p.Resolve(r).RemoteAddr
		if got == r.RemoteAddr {
			return
		}
		ap, err := netip.ParseAddrPort(got)
		if err != nil {
			t.Fatalf("%q gave %q", field, got)
		}
		if !strings.Contains(field, strings.TrimPrefix(ap.Addr().String(), "::ffff:")) && !strings.Contains(strings.ToLower(field), ap.Addr().String()) {
			// an address may be written in another form (leading zeros are
			// refused, but IPv6 may be spelled in several ways)
			if ap.Addr().Is4() {
				t.Fatalf("%q gave %q, which it does not name", field, got)
			}
		}
	})
}

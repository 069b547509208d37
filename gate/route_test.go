package gate

import (
	"os"
	"path/filepath"
	"testing"

	"largo/auth"
)

// TestCheckRoute: a route the rules may name (/_largo/metrics) is opened
// only by a rule whose path is the route: "/" open to everyone does not
// open it. A share link reaches no route; the server reaches every one.
func TestCheckRoute(t *testing.T) {
	f := newFixture(t, Within)
	const route = "_largo/metrics"
	check := func(when string, want map[Principal]string) {
		t.Helper()
		for p, w := range want {
			if got := code(f.gate.CheckRoute(as(p), auth.Read, route)); got != w {
				t.Errorf("%s: %s reads %s: %s; want %s", when, p, route, got, w)
			}
		}
	}
	check("no rule of its own", map[Principal]string{
		Anonymous(): "401", User("alice"): "403", User("bob"): "403", Server(): "ok", LinkHolder("AAAAAAAAAAAAAAAAAAAAAA"): "403",
	})
	p := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(p, []byte(policyFile+"\n[[rule]]\npath = \"/_largo/metrics\"\nusers = [\"alice\"]\nallow = [\"read\"]\n"), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f.gate.Access().Reload(pol)
	check("a rule naming alice", map[Principal]string{Anonymous(): "401", User("alice"): "ok", User("bob"): "403"})
}

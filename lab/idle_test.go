package lab

import (
	"context"
	"strings"
	"testing"
)

// TestIdle holds keep-alive connections to the test binary's file server:
// all held, figures per connection, and a file the server does not have
// fails the scenario instead of counting.
func TestIdle(t *testing.T) {
	r, dir, f := warmUpRunner(t)
	res := runIdle(context.Background(), r, roleServer("stand-in", "serve"), "200")
	if res.Outcome != "" && res.Outcome != OK {
		t.Fatalf("idle: %s", res.Outcome)
	}
	if res.Values["held"] != 200 || res.Values["fds"] < 200 {
		t.Fatalf("idle: figures %v", res.Values)
	}
	if _, ok := res.Values["kib_per_conn"]; !ok {
		t.Fatalf("idle: no memory per connection in %v", res.Values)
	}

	missing := f
	missing.name = "missing.bin"
	r.data.warmUp = missing
	in, err := r.start(context.Background(), roleServer("stand-in", "serve"), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	conns, err := holdIdle(context.Background(), in.addr, missing, 10)
	for _, c := range conns {
		c.Close()
	}
	if err == nil || len(conns) != 0 {
		t.Fatalf("a 404 counted as a held connection: %d held, %v", len(conns), err)
	}
}

// TestManyConns: only the idle scenario's nginx takes more connections,
// and the preset's own configuration is left as it was.
func TestManyConns(t *testing.T) {
	ng := presets["nginx"]()
	before := ng.Files["nginx.conf"]
	m := manyConns(ng)
	if !strings.Contains(m.Files["nginx.conf"], "worker_connections 16384;") || ng.Files["nginx.conf"] != before {
		t.Fatalf("nginx for many connections:\n%s\npreset now:\n%s", m.Files["nginx.conf"], ng.Files["nginx.conf"])
	}
	if c := manyConns(Largo()); c.Command != Largo().Command || c.Files != nil {
		t.Fatalf("largo changed: %+v", c)
	}
}

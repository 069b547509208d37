package lab

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseHostileCase(t *testing.T) {
	for _, c := range []struct {
		in   string
		want [hostileKinds]int
		ok   bool
	}{
		{"2000+2000+1000", [hostileKinds]int{2000, 2000, 1000}, true},
		{"0+1+0", [hostileKinds]int{0, 1, 0}, true},
		{"2000+2000", [hostileKinds]int{}, false},
		{"1+x+1", [hostileKinds]int{}, false},
		{"1+-1+1", [hostileKinds]int{}, false},
		{"1+1+10001", [hostileKinds]int{}, false},
	} {
		got, err := parseHostileCase(c.in)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("%q: %v, %v", c.in, got, err)
		}
	}
}

// TestWaitCut tells a connection the server closes from one it holds.
func TestWaitCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for range 2 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for _, close := range []bool{true, false} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sc := <-accepted
		if close {
			time.AfterFunc(100*time.Millisecond, func() { sc.Close() })
		}
		cut, err := waitCut(context.Background(), c, true, time.Now().Add(1500*time.Millisecond))
		if cut != close || err != nil {
			t.Errorf("server closes: %v; waitCut = %v, %v", close, cut, err)
		}
		if !close {
			// The drip reached the server: at least one byte.
			sc.SetReadDeadline(time.Now().Add(time.Second))
			if n, _ := sc.Read(make([]byte, 8)); n == 0 {
				t.Error("no byte dripped")
			}
			sc.Close()
		}
		c.Close()
	}
}

// TestHostileScenario runs the scenario, small, against a file server
// with the scenario's timeouts: every connection of every kind is cut
// within the idle timeout and a second, none is held, and the download is
// measured alone and loaded.
func TestHostileScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("holds connections for the idle timeout")
	}
	t.Parallel()
	r := hostileRunner(t, 8<<20)
	srv := roleServer("timeouts", "timeouts")
	srv.Hostile = srv.Command
	res := runHostile(context.Background(), r, srv, "10+10+10")
	if res.Outcome != "" && res.Outcome != OK {
		t.Fatalf("outcome %q", res.Outcome)
	}
	v := res.Values
	if v["never_cut"] != 0 || v["held"] < 20 || v["alone_mb_per_s"] <= 0 || v["loaded_mb_per_s"] <= 0 {
		t.Errorf("figures %v", v)
	}
	for _, k := range hostileKeys {
		m, ok := v[k+"_max_s"]
		if !ok || m < hostileIdle.Seconds()-0.5 || m > hostileIdle.Seconds()+1 {
			t.Errorf("%s: cut after %v s (recorded %v); want about %v", k, m, ok, hostileIdle)
		}
	}
	// A server without a hostile command is not run.
	res = runHostile(context.Background(), r, Server{Name: "no-command", Command: srv.Command}, "1+1+1")
	if res.Outcome == "" || res.Outcome == OK {
		t.Errorf("a server without a hostile command ran: %+v", res)
	}
}

// TestHostileNeverCut runs the scenario against a file server without
// timeouts: its slow heads and idle connections are counted as never cut,
// once the idle timeout and the quick run's grace have passed.
func TestHostileNeverCut(t *testing.T) {
	if testing.Short() {
		t.Skip("holds connections for the idle timeout and the grace")
	}
	t.Parallel()
	r := hostileRunner(t, 4<<10)
	r.cfg.Quick = true // a short grace
	srv := roleServer("plain", "serve")
	srv.Hostile = srv.Command
	res := runHostile(context.Background(), r, srv, "2+3+0")
	if res.Outcome != "" && res.Outcome != OK {
		t.Fatalf("outcome %q", res.Outcome)
	}
	if v := res.Values; v["never_cut"] != 5 || v["held"] != 5 {
		t.Errorf("figures %v; want 5 held and never cut", v)
	}
}

// hostileRunner is a test runner whose data is the warm-up file and a
// file of size bytes to download.
func hostileRunner(t *testing.T, size int64) *runner {
	t.Helper()
	r := testRunner(t, 1<<30)
	dir := t.TempDir()
	r.data = &dataSet{dir: dir}
	var err error
	if r.data.warmUp, err = writeWarmUp(dir); err != nil {
		t.Fatal(err)
	}
	f := dataFile{name: "data.bin", path: filepath.Join(dir, "data.bin"), size: size}
	if err := os.WriteFile(f.path, bytes.Repeat([]byte("x"), int(f.size)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.data.random = f
	return r
}

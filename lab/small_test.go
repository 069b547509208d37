package lab

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	const head = "Running 2s test @ http://127.0.0.1:1/warm-up-4KiB.bin\n  2 threads and 64 connections\n"
	for _, c := range []struct {
		name, out string
		n         int64
		wall      time.Duration
		ok        bool
	}{
		{"clean", head + "  38211 requests in 2.00s, 160.12MB read\nRequests/sec:  19105.50\n", 38211, 2 * time.Second, true},
		{"milliseconds", head + "  512 requests in 900.50ms, 2.1MB read\n", 512, 900500 * time.Microsecond, true},
		{"cut at the end", head + "  1000 requests in 1.00s, 4MB read\n  Socket errors: connect 0, read 12, write 0, timeout 3\n", 1000, time.Second, true},
		{"refused", head + "  10 requests in 1.00s, 4MB read\n  Socket errors: connect 64, read 0, write 0, timeout 0\n", 10, time.Second, false},
		{"errors answered", head + "  1000 requests in 1.00s, 4MB read\n  Non-2xx or 3xx responses: 1000\n", 1000, time.Second, false},
		{"nothing", head + "  0 requests in 1.00s, 0B read\n", 0, time.Second, false},
		{"garbage", "wrk: unknown option\n", 0, 0, false},
	} {
		n, wall, err := parseWrk(c.out)
		if (err == nil) != c.ok || n != c.n || wall != c.wall {
			t.Errorf("%s: %d requests in %v, %v; want %d in %v, ok %v", c.name, n, wall, err, c.n, c.wall, c.ok)
		}
	}
}

// TestSmall runs the small scenario, with wrk when it is installed and
// with the lab's own client either way, against the test binary's file
// server: figures, and answers that were all checked.
func TestSmall(t *testing.T) {
	r, dir, f := warmUpRunner(t)
	res := runSmall(context.Background(), r, roleServer("stand-in", "serve"), "8")
	if res.Outcome != "" && res.Outcome != OK {
		t.Fatalf("small: %s", res.Outcome)
	}
	if res.Values["rps"] <= 0 || res.Values["cpu_us_per_req"] <= 0 {
		t.Fatalf("small: figures %v", res.Values)
	}
	want := "go"
	if _, err := exec.LookPath("wrk"); err == nil {
		want = "wrk"
	}
	if res.Text["client"] != want {
		t.Errorf("client %q, want %q", res.Text["client"], want)
	}

	// The lab's own client counts only right answers: a missing file
	// fails it.
	in, err := r.start(context.Background(), roleServer("stand-in", "serve"), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	n, _, err := hammer(context.Background(), in.base+f.name, f.size, 4, 200*time.Millisecond)
	if err != nil || n == 0 {
		t.Fatalf("hammer: %d answers, %v", n, err)
	}
	if _, _, err := hammer(context.Background(), in.base+"missing.bin", f.size, 4, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("hammer of a missing file: %v", err)
	}
}

// warmUpRunner is a quick runner whose data is only the warm-up file, in
// dir: what the scenarios of small requests serve.
func warmUpRunner(t *testing.T) (*runner, string, dataFile) {
	t.Helper()
	r := testRunner(t, 0)
	r.cfg.Quick = true
	dir := t.TempDir()
	f, err := writeWarmUp(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.data = &dataSet{dir: dir, warmUp: f}
	return r, dir, f
}

// TestMany runs the many scenario over a few files, with wrk when it is
// installed (its script walking them) and with the lab's own client
// either way: figures, every file asked for, and answers all checked.
func TestMany(t *testing.T) {
	r, _, _ := warmUpRunner(t)
	r.cfg.Progress = io.Discard
	res := runMany(context.Background(), r, roleServer("stand-in", "serve"), "16")
	if res.Outcome != "" && res.Outcome != OK {
		t.Fatalf("many: %s", res.Outcome)
	}
	if res.Values["rps"] <= 0 || res.Values["cpu_us_per_req"] <= 0 {
		t.Fatalf("many: figures %v", res.Values)
	}
	dir, err := r.data.smallFiles(context.Background(), r.cfg, 16)
	if err != nil {
		t.Fatal(err)
	}
	in, err := r.start(context.Background(), roleServer("stand-in", "serve"), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	var mu sync.Mutex
	asked := map[string]bool{}
	urlOf := func(conn, i int) string {
		u := in.base + manyName((conn+i*4)%16)
		mu.Lock()
		asked[u] = true
		mu.Unlock()
		return u
	}
	if n, _, err := hammerEach(context.Background(), urlOf, warmUpSize, 4, 300*time.Millisecond); err != nil || n < 16 {
		t.Fatalf("hammer: %d answers, %v", n, err)
	}
	if len(asked) != 16 {
		t.Errorf("%d of 16 files asked for", len(asked))
	}
	if _, err := exec.LookPath("wrk"); err == nil {
		script := string(manyScript(16))
		if !strings.Contains(script, "cursor >= 16") || !strings.Contains(script, `"/f%05d.bin"`) {
			t.Errorf("wrk script:\n%s", script)
		}
	}
}

package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"largo/internal/testenv"
)

// TestDistanceCases: every case has a name of its own, which finds it
// again; the full run has each -j at each round trip beside curl and
// rclone, and the big file last; the quick run is smaller.
func TestDistanceCases(t *testing.T) {
	rtts := DefaultRTTs()
	full := distanceCases(rtts, 1<<30, false)
	quick := distanceCases(rtts, 64<<20, true)
	if len(full) != 2*2*5+1 || len(quick) >= len(full) {
		t.Fatalf("%d cases, %d quick", len(full), len(quick))
	}
	seen := map[string]bool{}
	var names []string
	for _, c := range full {
		if seen[c.String()] {
			t.Errorf("two cases named %q", c)
		}
		seen[c.String()] = true
		names = append(names, c.String())
	}
	for _, want := range []string{"largo get -j 1, 50 ms", "largo put -j 8, 150 ms", "curl put, 150 ms", "rclone get, 50 ms", "largo put -j 8, 8GiB, 50 ms"} {
		if !seen[want] {
			t.Errorf("no case %q among %q", want, names)
		}
	}
	if last := quick[len(quick)-1].String(); last != "largo put -j 8, 128MiB, 50 ms" {
		t.Errorf("the quick run's last case is %q", last)
	}
	if got := rttName(1500 * time.Microsecond); got != "1.5 ms" {
		t.Errorf("rttName = %q", got)
	}
}

// TestJoinedTime reads the final request's time from largo put's summary,
// and nothing from a summary without one.
func TestJoinedTime(t *testing.T) {
	for _, tt := range []struct {
		out  string
		want time.Duration
	}{
		{"uploaded f.bin: 64 MiB, 64 MiB moved in 670ms (96.1 MiB/s), joined by the server in 163ms, verified against the server's sha-256\n", 163 * time.Millisecond},
		{"progress\nuploaded f.bin: 8 GiB, joined by the server in 1.204s\n", 1204 * time.Millisecond},
		{"uploaded f.bin: 64 MiB, joined by the server in 0s, verified\n", time.Nanosecond},
		{"uploaded f.bin: 64 MiB, 64 MiB moved in 670ms (96.1 MiB/s), verified against the server's sha-256\n", 0},
	} {
		got, err := joinedTime([]byte(tt.out))
		if err != nil || got != tt.want {
			t.Errorf("joinedTime(%q) = %v, %v; want %v", tt.out, got, err, tt.want)
		}
	}
}

// TestDistanceSettings: the path's settings get their defaults, and bad
// ones are refused.
func TestDistanceSettings(t *testing.T) {
	cfg, err := Config{Exe: "largo", MemoryGuard: 1 << 30}.withDefaults()
	if err != nil || !slices.Equal(cfg.RTTs, DefaultRTTs()) || cfg.StreamRate != DefaultStreamRate || cfg.StreamWindow != 0 {
		t.Fatalf("defaults: %v %v %v, %v", cfg.RTTs, cfg.StreamRate, cfg.StreamWindow, err)
	}
	if cfg, _ := (Config{Exe: "largo", MemoryGuard: 1 << 30, Quick: true}).withDefaults(); cfg.StreamRate != QuickStreamRate {
		t.Errorf("quick rate %d", cfg.StreamRate)
	}
	for _, bad := range []Config{
		{RTTs: []time.Duration{-time.Millisecond}},
		{RTTs: []time.Duration{time.Hour}},
		{StreamRate: 10},
		{StreamWindow: 100},
		{StreamWindow: -1},
	} {
		bad.Exe, bad.MemoryGuard = "largo", 1<<30
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v was taken", bad)
		}
	}
}

// TestDistanceOnlyLargo: the scenario takes largo's server alone, and
// says so of the others without starting them.
func TestDistanceOnlyLargo(t *testing.T) {
	res := runDistance(context.Background(), nil, Naive(), "curl get, 50 ms")
	if !strings.HasPrefix(res.Outcome, errUnsupported.Error()) {
		t.Errorf("naive: outcome %q; want not supported", res.Outcome)
	}
}

// TestDistanceChart draws the two charts of a report with distance
// results alone, from the medians of the repetitions.
func TestDistanceChart(t *testing.T) {
	rep := &Report{Settings: Settings{Size: 1 << 30, RTTMillis: []float64{50, 150}, StreamRate: 16e6}}
	for rp := 1; rp <= 3; rp++ {
		for _, c := range distanceCases(DefaultRTTs(), 1<<30, false) {
			res := Result{Scenario: distanceScenario.name, Server: "largo", Case: c.String(), Rep: rp, Outcome: OK}
			res.set(keyMBps, float64(max(c.jobs, 1)*15+rp))
			rep.add(res)
		}
	}
	if v, ok := rep.median(distanceScenario.name, "largo get -j 8, 150 ms", keyMBps); !ok || v != 122 {
		t.Errorf("median %v, %v; want 122", v, ok)
	}
	paths, err := rep.WriteCharts(t.TempDir())
	if err != nil || len(paths) != 2 {
		t.Fatalf("wrote %v, %v; want the two distance charts", paths, err)
	}
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || filepath.Base(p) != distanceCharts[i].file {
			t.Fatalf("%s: %v", p, err)
		}
		for _, want := range []string{"50 ms round trip", "150 ms round trip", "the cap of one connection", "16 MB/s"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", p, want)
			}
		}
	}
}

// TestDistanceQuick runs the quick scenario, at one round trip, against
// largo built from this tree: every transfer through the shaper arrives
// whole (checked by the scenario), the parallel ones over several
// connections, each parallel put with its final request timed.
func TestDistanceQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds largo and moves a few hundred MiB")
	}
	t.Parallel()
	gobin := testenv.Program(t, "go")
	testenv.Program(t, "curl")
	testenv.Program(t, "rclone")
	dir := t.TempDir()
	exe := filepath.Join(dir, "largo")
	build := exec.Command(gobin, "build", "-o", exe, "largo/cmd/largo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building largo: %v\n%s", err, out)
	}
	r := testRunner(t, 4<<30)
	r.cfg.Exe, r.cfg.Quick, r.cfg.Size = exe, true, 64<<20
	r.cfg.RTTs, r.cfg.StreamRate = []time.Duration{20 * time.Millisecond}, 200e6
	r.data = &dataSet{dir: filepath.Join(dir, "data")}
	if err := os.Mkdir(r.data.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.data.warmUp, err = writeWarmUp(r.data.dir); err != nil {
		t.Fatal(err)
	}
	r.data.random = writeTestRandom(t, r.data.dir, r.cfg.Size)

	for _, c := range distanceCases(r.cfg.RTTs, r.cfg.Size, true) {
		res := runDistance(context.Background(), r, Largo(), c.String())
		t.Logf("%s: %s %v", c, res.Outcome, res.Values)
		if res.Outcome != "" && res.Outcome != OK {
			t.Errorf("%s: %s", c, res.Outcome)
			continue
		}
		v := res.Values
		if v[keyMBps] <= 0 || v[keyWall] <= 0 || v[keyConns] < 1 {
			t.Errorf("%s: figures %v", c, v)
		}
		if c.jobs > 1 && v[keyConns] < 2 {
			t.Errorf("%s: %v connections at most", c, v[keyConns])
		}
		if _, ok := v[keyJoined]; ok != (c.verb == "put" && c.jobs > 1) {
			t.Errorf("%s: final request %v (%v)", c, v[keyJoined], ok)
		}
	}
}

// writeTestRandom writes a data file of size random bytes into dir, with
// its sha256.
func writeTestRandom(t *testing.T, dir string, size int64) dataFile {
	t.Helper()
	f := dataFile{name: "random.bin", path: filepath.Join(dir, "random.bin"), size: size}
	out, err := os.Create(f.path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	err = writeRandom(io.MultiWriter(out, h), size)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	f.sha = hex.EncodeToString(h.Sum(nil))
	return f
}

//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo/internal/versitygw"
	"largo/lab"
	"largo/proc"
)

// benchRun is a running `largo bench`.
type benchRun struct {
	cmd       *exec.Cmd
	out, errb lockedBuffer
	done      chan struct{}
}

// startBench starts `largo bench args...`; it is killed when the test ends.
func startBench(t *testing.T, args ...string) *benchRun {
	t.Helper()
	b := &benchRun{cmd: exec.Command(largoBin, append([]string{"bench"}, args...)...), done: make(chan struct{})}
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.errb
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.cmd.Wait(); close(b.done) }()
	t.Cleanup(func() { b.cmd.Process.Kill(); <-b.done })
	return b
}

// wait waits for the run to end and returns its exit code, failing the
// test after timeout.
func (b *benchRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(timeout):
		t.Fatalf("largo bench %v still running after %s\n%s", b.cmd.Args[1:], timeout, tail(b.errb.String(), 4096))
	}
	return b.cmd.ProcessState.ExitCode()
}

// runBench runs `largo bench args...` to its end and returns its exit
// code, stdout and stderr.
func runBench(t *testing.T, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	b := startBench(t, args...)
	code := b.wait(t, timeout)
	return code, b.out.String(), b.errb.String()
}

// readReport reads the JSON report of a run.
func readReport(t *testing.T, path string) *lab.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep lab.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// row returns a row of the report, failing the test if it is missing.
func row(t *testing.T, rep *lab.Report, scenario, server, cs string) *lab.Row {
	t.Helper()
	r := rep.Row(scenario, server, cs)
	if r == nil {
		t.Fatalf("no %s row for %s, case %q", scenario, server, cs)
	}
	return r
}

// TestBenchQuick runs the quick lab against largo and the naive baseline
// and checks what the figures must show.
func TestBenchQuick(t *testing.T) {
	dir := t.TempDir()
	jsonPath, charts := filepath.Join(dir, "bench.json"), filepath.Join(dir, "charts")
	code, stdout, stderr := runBench(t, 3*time.Minute, "--quick", "--json", jsonPath, "--charts", charts)
	if code != 0 {
		t.Fatalf("largo bench --quick: exit %d\n%s", code, tail(stderr, 4096))
	}
	rep := readReport(t, jsonPath)

	// Every scenario produced figures for both servers.
	for _, sc := range lab.ScenarioNames() {
		if !strings.Contains(stdout, "## "+sc+"\n") {
			t.Errorf("no %s table on stdout", sc)
		}
		for _, server := range []string{"largo", "naive"} {
			if (sc == "https" || sc == "bucket") && server == "naive" {
				continue // served over TLS by largo, nginx and Caddy only; buckets by largo only
			}
			n := 0
			for _, r := range rep.Rows {
				if r.Scenario != sc || r.Server != server {
					continue
				}
				n++
				if len(r.Values) == 0 {
					t.Errorf("%s on %s, case %s: no figures (%s)", sc, server, r.Case, r.Outcome)
				}
			}
			if n == 0 {
				t.Errorf("%s: no rows for %s", sc, server)
			}
		}
	}
	if !strings.Contains(stderr, "[1/") {
		t.Error("no progress on stderr")
	}

	// Buffering costs the file per download; streaming does not.
	l5, n5 := row(t, rep, "download", "largo", "5"), row(t, rep, "download", "naive", "5")
	if l5.Outcome != lab.OK || n5.Outcome != lab.OK {
		t.Fatalf("downloads at concurrency 5: largo %s, naive %s", l5.Outcome, n5.Outcome)
	}
	lp, np := l5.Values["peak_mib"].Median, n5.Values["peak_mib"].Median
	if lp <= 0 || np < 3*lp {
		t.Errorf("peak RSS at concurrency 5: naive %.1f MiB, largo %.1f MiB; want naive at least 3x largo", np, lp)
	}
	for _, c := range []string{"1", "20"} {
		if r := row(t, rep, "download", "largo", c); r.Outcome != lab.OK || r.Values["mb_per_s"].Median <= 0 {
			t.Errorf("largo downloads at concurrency %s: %s", c, r.Outcome)
		}
	}

	// A bucket read by twenty clients and written by one, through largo.
	if versitygw.Find() != "" {
		for _, c := range []string{"read 20", "write 1"} {
			if r := row(t, rep, "bucket", "largo", c); r.Outcome != lab.OK || r.Values["mb_per_s"].Median <= 0 {
				t.Errorf("largo on a bucket, %s: %s", c, r.Outcome)
			}
		}
	}

	// No descriptor left behind by aborted downloads.
	ab := row(t, rep, "abort", "largo", "20")
	if ab.Outcome != lab.OK || ab.Values["leaked"].Max != 0 || ab.Values["fds_on_file"].Max != 0 || ab.Values["min_got_mib"].Min < 1 {
		t.Errorf("largo after 20 aborts: %s, leaked %v, on the file %v", ab.Outcome, ab.Values["leaked"], ab.Values["fds_on_file"])
	}

	// A resumed download is the file.
	rs := row(t, rep, "resume", "largo", "half")
	if rs.Outcome != lab.OK || rs.Text["sha256"] != "match" || rs.Text["status"] != "206 Partial Content" {
		t.Errorf("largo resume: %s, sha256 %s, %s", rs.Outcome, rs.Text["sha256"], rs.Text["status"])
	}
	if nr := row(t, rep, "resume", "naive", "half"); !strings.HasPrefix(nr.Outcome, "no resume") {
		t.Errorf("naive resume: %s; it knows no ranges", nr.Outcome)
	}

	// Past 2 GiB: largo serves, the buffered server refuses.
	if c := row(t, rep, "ceiling", "largo", "2GiB+1"); c.Text["status"] != "served whole" {
		t.Errorf("largo at 2 GiB + 1: %s", c.Outcome)
	}
	if c := row(t, rep, "ceiling", "naive", "2GiB+1"); c.Text["status"] != "500 Internal Server Error" {
		t.Errorf("naive at 2 GiB + 1: %s", c.Outcome)
	}

	// A stalled client costs largo the socket buffers, not the file.
	st := row(t, rep, "stalled", "largo", "2s")
	if read := st.Values["read_mb"].Median; read <= 0 || read > 16 {
		t.Errorf("largo read %.1f MB for a stalled client", read)
	}
	// Idle is read after one warm-up request and peaks count from there,
	// not from start-up: what a stalled client and 20 downloads add to
	// largo is their connections, against the file per download that the
	// buffered server pays.
	for _, r := range []*lab.Row{st, row(t, rep, "download", "largo", "20")} {
		idle, above := r.Values["idle_mib"].Median, r.Values["above_idle_mib"]
		if idle <= 0 || above.Min < 0 || above.Max > 4 {
			t.Errorf("largo %s %s: idle %.1f MiB, peak %v MiB above it; want at most 4", r.Scenario, r.Case, idle, above)
		}
	}
	// Uploads: both store the file; the buffered server holds it whole.
	lu, nu := row(t, rep, "upload", "largo", "64MiB"), row(t, rep, "upload", "naive", "64MiB")
	for _, u := range []*lab.Row{lu, nu} {
		if u.Outcome != lab.OK || u.Text["stored"] != "intact" {
			t.Errorf("%s upload: %s, stored %s", u.Server, u.Outcome, u.Text["stored"])
		}
	}
	if la, na := lu.Values["above_idle_mib"].Median, nu.Values["above_idle_mib"].Median; na < 3*max(la, 1) {
		t.Errorf("upload memory above idle: naive %.1f MiB, largo %.1f MiB; want naive at least 3x largo", na, la)
	}

	// Compression: every body decodes to the file; the log is compressed
	// when asked, the incompressible file never is.
	for _, r := range rep.Rows {
		if r.Scenario != "compress" || r.Server != "largo" {
			continue
		}
		kind, asked, _ := strings.Cut(r.Case, " ")
		want := asked
		if kind == "random" {
			want = "identity"
		}
		if r.Outcome != lab.OK || r.Text["decoded"] != "intact" || r.Text["encoding"] != want {
			t.Errorf("largo compress %s: %s, Content-Encoding %s, body %s", r.Case, r.Outcome, r.Text["encoding"], r.Text["decoded"])
		}
	}

	svgs, _ := filepath.Glob(filepath.Join(charts, "*.svg"))
	if len(svgs) != 3 {
		t.Errorf("charts: %v", svgs)
	}

	// The saved report renders the same tables.
	code, again, stderr := runBench(t, 20*time.Second, "render", jsonPath)
	if code != 0 || again != stdout {
		t.Errorf("bench render: exit %d, %s; tables differ from the run's: %v", code, stderr, again != stdout)
	}
}

// TestBenchPeers runs a short lab against the peer presets.
func TestBenchPeers(t *testing.T) {
	for _, p := range []string{"nginx", "caddy", "node"} {
		need(t, p)
	}
	jsonPath := filepath.Join(t.TempDir(), "peers.json")
	code, _, stderr := runBench(t, 3*time.Minute, "--quick", "--scenarios", "download,abort,resume",
		"--concurrency", "2", "--peer", "nginx", "--peer", "caddy", "--peer", "node", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("largo bench with peers: exit %d\n%s", code, tail(stderr, 4096))
	}
	rep := readReport(t, jsonPath)
	for _, p := range []string{"nginx", "caddy", "node"} {
		d := row(t, rep, "download", p, "2")
		if d.Outcome != lab.OK || d.Values["idle_mib"].Median <= 0 || d.Values["peak_mib"].Median < d.Values["idle_mib"].Median || d.Values["mb_per_s"].Median <= 0 {
			t.Errorf("%s download: %s %v", p, d.Outcome, d.Values)
		}
		if a := row(t, rep, "abort", p, "20"); a.Outcome != lab.OK || a.Values["fds_idle"].Median <= 0 {
			t.Errorf("%s abort: %s %v", p, a.Outcome, a.Values)
		}
		if r := row(t, rep, "resume", p, "half"); r.Text["sha256"] != "match" {
			t.Errorf("%s resume: %s", p, r.Outcome)
		}
	}
}

func TestBenchErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--client", "wget"}, "client"},
		{[]string{"--peer", "apache"}, "not a preset"},
		{[]string{"--peer", "x=serve {dir}"}, "{port}"},
		{[]string{"--scenarios", "download,nope"}, `unknown scenario "nope"`},
		{[]string{"--concurrency", "0"}, "concurrency 0"},
		{[]string{"--size", "1KiB"}, "at least 4 MiB"},
		{[]string{"--json", "/nonexistent/dir/x.json"}, "cannot write"},
		{[]string{"extra"}, "unknown command"},
	}
	for _, tt := range tests {
		code, _, stderr := runBench(t, 20*time.Second, tt.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want exit 2 and one line naming %q", tt.args, code, stderr, tt.want)
		}
	}
	code, out, _ := runBench(t, 20*time.Second, "--help")
	for _, flag := range []string{"--scenarios", "--size", "--quick", "--concurrency", "--hold", "--reps", "--client", "--peer", "--data", "--json", "--charts", "--memory-guard", "LARGO_MEMORY_GUARD", "default 1GiB", "default 20s", "default 3"} {
		if code != 0 || !strings.Contains(out, flag) {
			t.Errorf("bench --help lacks %q", flag)
		}
	}
}

// TestBenchInterrupt stops a run with SIGINT while a server is held: the
// run prints what it measured, exits 3, and leaves no server behind.
func TestBenchInterrupt(t *testing.T) {
	b := startBench(t, "--quick", "--scenarios", "stalled", "--hold", "60s")
	// Held: a server has read off the file what the stalled client's
	// socket takes (megabytes; the warm-up file is 4 KiB).
	var servers []int
	if !waitFor(60*time.Second, func() bool {
		if !strings.Contains(b.errb.String(), "[1/2]") {
			return false
		}
		servers, _ = proc.Children(b.cmd.Process.Pid)
		for _, pid := range servers {
			if io, err := proc.TreeIO(pid); err == nil && io.RChar > 1<<20 {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no server sent the stalled client its fill:\n%s", b.errb.String())
	}
	b.cmd.Process.Signal(syscall.SIGINT)
	if code := b.wait(t, 20*time.Second); code != 3 {
		t.Errorf("exit %d after SIGINT; want 3", code)
	}
	if !strings.Contains(b.out.String(), "| largo | 1m0s | interrupted |") {
		t.Errorf("the interrupted row is not in the table:\n%s", b.out.String())
	}
	for _, pid := range servers {
		if _, err := proc.ReadStat(pid); err == nil {
			t.Errorf("server %d still running after the interrupted run", pid)
		}
	}
}

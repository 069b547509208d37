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

	"largo/internal/testenv"
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

// TestBenchSmoke runs a small lab, three scenarios on small files,
// against largo, the naive baseline and a bucket: every row has its
// figures, a resumed download is the file, the baseline cannot resume,
// and the saved report renders the same tables. The whole quick lab, with
// its peers, is TestLabQuick and TestLabPeers (build tag lab, make
// test-lab).
func TestBenchSmoke(t *testing.T) {
	if versitygw.Find() == "" {
		testenv.Missing(t, "%s not found: scripts/test-deps installs it; the lab's bucket scenario needs it", versitygw.Program)
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "bench.json")
	code, stdout, stderr := runBench(t, 2*time.Minute, "--quick", "--size", "8MiB", "--concurrency", "2",
		"--scenarios", "download,resume,bucket", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("largo bench: exit %d\n%s", code, tail(stderr, 4096))
	}
	rep := readReport(t, jsonPath)
	for _, server := range []string{"largo", "naive"} {
		d := row(t, rep, "download", server, "2")
		if d.Outcome != lab.OK || d.Values["mb_per_s"].Median <= 0 || d.Values["idle_mib"].Median <= 0 || d.Values["peak_mib"].Median <= 0 {
			t.Errorf("%s downloads: %s %v", server, d.Outcome, d.Values)
		}
	}
	if rs := row(t, rep, "resume", "largo", "half"); rs.Outcome != lab.OK || rs.Text["sha256"] != "match" || rs.Text["status"] != "206 Partial Content" {
		t.Errorf("largo resume: %s, sha256 %s, %s", rs.Outcome, rs.Text["sha256"], rs.Text["status"])
	}
	if nr := row(t, rep, "resume", "naive", "half"); !strings.HasPrefix(nr.Outcome, "no resume") {
		t.Errorf("naive resume: %s; it knows no ranges", nr.Outcome)
	}
	for _, c := range []string{"read 20", "write 1"} {
		if r := row(t, rep, "bucket", "largo", c); r.Outcome != lab.OK || r.Values["mb_per_s"].Median <= 0 {
			t.Errorf("largo on a bucket, %s: %s", c, r.Outcome)
		}
	}
	if !strings.Contains(stderr, "[1/") {
		t.Error("no progress on stderr")
	}
	code, again, stderr := runBench(t, 20*time.Second, "render", jsonPath)
	if code != 0 || again != stdout {
		t.Errorf("bench render: exit %d, %s; tables differ from the run's: %v", code, stderr, again != stdout)
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

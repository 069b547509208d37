//go:build e2e && lab

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/internal/testenv"
	"largo/internal/versitygw"
	"largo/lab"
)

// The lab's long runs: the whole quick lab, and the lab beside its peers,
// minutes each. They run with the build tags e2e and lab (make test-lab),
// not in make test, which runs TestBenchSmoke instead.

// TestLabQuick runs the whole quick lab against largo and the naive
// baseline and checks that every scenario measured and what each must
// show of largo's behaviour: no descriptor leaked, a resumed download
// whole, files past 2 GiB served, a stalled client fed no more than its
// sockets hold, uploads stored intact, compressed bodies that decode. The
// memory and speed figures are the lab's to report, not this test's to
// judge.
func TestLabQuick(t *testing.T) {
	if versitygw.Find() == "" {
		testenv.Missing(t, "%s not found: scripts/test-deps installs it; the lab's bucket scenario needs it", versitygw.Program)
	}
	dir := t.TempDir()
	jsonPath, charts := filepath.Join(dir, "bench.json"), filepath.Join(dir, "charts")
	code, stdout, stderr := runBench(t, 5*time.Minute, "--quick", "--json", jsonPath, "--charts", charts)
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
			if (sc == "https" || sc == "bucket" || sc == "caps" || sc == "distance") && server == "naive" {
				continue // TLS by largo, nginx and Caddy only; buckets, caps and the shaped path by largo only
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

	// Downloads measured, memory included: largo's at every concurrency,
	// the buffered server's at 5.
	for _, r := range []*lab.Row{row(t, rep, "download", "largo", "1"), row(t, rep, "download", "largo", "5"),
		row(t, rep, "download", "largo", "20"), row(t, rep, "download", "naive", "5")} {
		if r.Outcome != lab.OK || r.Values["mb_per_s"].Median <= 0 || r.Values["idle_mib"].Median <= 0 || r.Values["peak_mib"].Median <= 0 {
			t.Errorf("%s downloads at concurrency %s: %s %v", r.Server, r.Case, r.Outcome, r.Values)
		}
	}

	// A bucket read by twenty clients and written by one, through largo.
	for _, c := range []string{"read 20", "write 1"} {
		if r := row(t, rep, "bucket", "largo", c); r.Outcome != lab.OK || r.Values["mb_per_s"].Median <= 0 {
			t.Errorf("largo on a bucket, %s: %s", c, r.Outcome)
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
	// Peaks count from idle, read after one warm-up request, not from
	// start-up: a figure below idle is a measuring error.
	for _, r := range []*lab.Row{st, row(t, rep, "download", "largo", "20")} {
		if idle, above := r.Values["idle_mib"].Median, r.Values["above_idle_mib"]; idle <= 0 || above.Min < 0 {
			t.Errorf("largo %s %s: idle %.1f MiB, peak %v MiB above it", r.Scenario, r.Case, idle, above)
		}
	}
	// Uploads: both servers store the file.
	for _, server := range []string{"largo", "naive"} {
		if u := row(t, rep, "upload", server, "64MiB"); u.Outcome != lab.OK || u.Text["stored"] != "intact" {
			t.Errorf("%s upload: %s, stored %s", u.Server, u.Outcome, u.Text["stored"])
		}
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

// TestLabPeers runs a short lab against the peer presets.
func TestLabPeers(t *testing.T) {
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

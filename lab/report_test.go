package lab

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestTally(t *testing.T) {
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"ok", "ok", "ok"}, "ok"},
		{[]string{"ok", "crashed", "ok"}, "ok 2/3; crashed 1/3"},
		{[]string{"killed by the guard at 12000 MiB"}, "killed by the guard at 12000 MiB"},
		{[]string{"killed by the guard at 12132 MiB", "killed by the guard at 12520 MiB", "killed by the guard at 12136 MiB"}, "killed by the guard at 12132–12520 MiB"},
		{[]string{"ok", "killed by the guard at 12052 MiB", "ok"}, "ok 2/3; killed by the guard at 12052 MiB 1/3"},
		{[]string{"answered 500 Internal Server Error", "answered 500 Internal Server Error"}, "answered 500 Internal Server Error"},
		{[]string{"no resume: all 1073.7 MB again", "no resume: all 1073.7 MB again"}, "no resume: all 1073.7 MB again"},
	}
	for _, tt := range tests {
		if got := tally(tt.words, len(tt.words)); got != tt.want {
			t.Errorf("tally(%q) = %q; want %q", tt.words, got, tt.want)
		}
	}
}

func TestColumnFormat(t *testing.T) {
	row := Row{
		Values: map[string]Spread{
			"one":  {Median: 1.234, Min: 1.234, Max: 1.234, N: 1},
			"same": {Median: 2, Min: 1.999, Max: 2.001, N: 3},
			"many": {Median: 2, Min: 1, Max: 30, N: 3},
		},
		Text: map[string]string{"sha": "match", "pipe": "a|b"},
	}
	tests := []struct {
		c    column
		want string
	}{
		{column{key: "one", digits: 2}, "1.23"},
		{column{key: "same", digits: 1}, "2.0"},
		{column{key: "many", digits: 1}, "2.0 (1.0–30.0)"},
		{column{key: "none", digits: 1}, "–"},
		{column{key: "sha", text: true}, "match"},
		{column{key: "pipe", text: true}, `a\|b`},
		{column{key: "gone", text: true}, "–"},
	}
	for _, tt := range tests {
		if got := tt.c.format(row); got != tt.want {
			t.Errorf("%s: %q; want %q", tt.c.key, got, tt.want)
		}
	}
}

// testReport is a report of two servers over three repetitions of the
// download scenario, one of which failed for naive.
func testReport() *Report {
	rep := newReport(Config{Scenarios: []string{"download", "stalled"}, Size: 1 << 30, Concurrency: []int{1, 5}, Reps: 3, Client: "go",
		Servers: []Server{Largo(), Naive()}, Exe: "/usr/local/bin/largo"}, "/data")
	for rp := 1; rp <= 3; rp++ {
		for _, c := range []string{"1", "5"} {
			l := Result{Scenario: "download", Server: "largo", Case: c, Rep: rp, Outcome: OK}
			l.set(keyPeak, 20+float64(rp))
			l.set(keyMBps, 1000*float64(rp))
			rep.add(l)
			n := Result{Scenario: "download", Server: "naive", Case: c, Rep: rp, Outcome: OK}
			n.set(keyPeak, 1100*float64(rp))
			if c == "5" && rp == 2 {
				n.Outcome = "killed by the guard at 5000 MiB"
			}
			rep.add(n)
		}
	}
	rep.finish()
	return rep
}

func TestReportRows(t *testing.T) {
	rep := testReport()
	if len(rep.Rows) != 4 {
		t.Fatalf("%d rows; want 4", len(rep.Rows))
	}
	r := rep.Row("download", "largo", "5")
	if r == nil || r.OK != 3 || r.Reps != 3 || r.Values[keyPeak] != (Spread{Median: 22, Min: 21, Max: 23, N: 3}) {
		t.Fatalf("largo c=5: %+v", r)
	}
	n := rep.Row("download", "naive", "5")
	if n.OK != 2 || n.Outcome != "ok 2/3; killed by the guard at 5000 MiB 1/3" {
		t.Fatalf("naive c=5: %+v", n)
	}
	if rep.Row("download", "nginx", "5") != nil {
		t.Fatal("a row for a server that did not run")
	}
	// Charts plot only the repetitions that went as planned.
	pts := rep.points("naive", keyPeak)
	if len(pts) != 2 || pts[1].x != 5 || pts[1].y != 2200 {
		t.Fatalf("naive points %v; want c=5 at the median of reps 1 and 3", pts)
	}
}

func TestReportMarkdownAndJSON(t *testing.T) {
	rep := testReport()
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"## download",
		"| server | concurrent | outcome | wall s | MB/s |",
		"| largo | 5 | ok | – | 2000 (1000–3000) | – | 22.0 (21.0–23.0) |",
		"| naive | 5 | ok 2/3; killed by the guard at 5000 MiB 1/3 |",
		"- **naive**: `/usr/local/bin/largo bench naive-server /data --listen 127.0.0.1:0`",
		"- **largo**: `/usr/local/bin/largo serve /data --listen 127.0.0.1:0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	// The commands as they ran: no placeholder left.
	if strings.Contains(out, "{") {
		t.Errorf("a placeholder left in the report:\n%s", out)
	}
	if strings.Contains(out, "## stalled") {
		t.Error("a heading for a scenario with no results")
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	// Read back, the report makes the same tables.
	again, err := ReadReport(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var md2 bytes.Buffer
	again.WriteMarkdown(&md2)
	if md2.String() != out {
		t.Errorf("tables of the report read back differ:\n%s", md2.String())
	}
	for _, bad := range []string{"", "{}", `{"settings": {"scenarios": ["download"]}}`, "[1]"} {
		if _, err := ReadReport(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadReport(%q) accepted", bad)
		}
	}
	if len(back.Results) != 12 || len(back.Rows) != 4 || back.Settings.Size != 1<<30 || back.Rows[0].Values[keyPeak].N != 3 {
		t.Fatalf("JSON round trip lost figures: %d results, %d rows", len(back.Results), len(back.Rows))
	}
}

func TestWriteCharts(t *testing.T) {
	dir := t.TempDir()
	paths, err := testReport().WriteCharts(dir)
	if err != nil || len(paths) != 2 { // no CPU figures: no CPU chart
		t.Fatalf("WriteCharts = %v, %v", paths, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("largo")) {
			t.Errorf("%s: not an SVG chart naming the servers (%v)", p, err)
		}
	}
	if _, err := (&Report{}).WriteCharts(dir); err == nil {
		t.Error("charts of an empty report")
	}
}

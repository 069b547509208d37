package lab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestThrottledSeconds reads the throttled time from a server's metrics,
// summed over its kinds of cap, and fails without it.
func TestThrottledSeconds(t *testing.T) {
	metrics := "# HELP x\nlargo_throttled_seconds_total{key=\"address\"} 1.5\nlargo_throttled_seconds_total{key=\"user\"} 2\nlargo_bytes_sent_total 9\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_largo/metrics" {
			fmt.Fprint(w, metrics)
		}
	}))
	defer srv.Close()
	got, err := throttledSeconds(context.Background(), srv.Client(), srv.URL+"/")
	if err != nil || got != 3.5 {
		t.Errorf("throttled %v, %v; want 3.5", got, err)
	}
	metrics = "largo_bytes_sent_total 9\n"
	if _, err := throttledSeconds(context.Background(), srv.Client(), srv.URL+"/"); err == nil {
		t.Error("metrics without the figure were read as zero")
	}
}

// TestCapsOnlyLargo: the scenario takes largo alone, and says so of the
// others without starting them.
func TestCapsOnlyLargo(t *testing.T) {
	res := runCaps(context.Background(), nil, Naive(), capsLowCase)
	if !strings.HasPrefix(res.Outcome, errUnsupported.Error()) {
		t.Errorf("naive: outcome %q; want not supported", res.Outcome)
	}
}

// TestCapsChart draws the chart of a report with caps results alone (no
// download results, which the other charts need), from the medians of
// its repetitions.
func TestCapsChart(t *testing.T) {
	rep := &Report{}
	for rp, v := range []float64{9.9, 10.1, 10.0} {
		res := Result{Scenario: capsScenario.name, Server: "largo", Case: capsLowCase, Rep: rp + 1, Outcome: OK}
		for s := 1; s <= 3; s++ {
			res.set(fmt.Sprintf("%s%s@%d", capsSeries, capsLines[0][0], s), v)
			res.set(fmt.Sprintf("%s%s@%d", capsSeries, capsLines[1][0], s), v/8)
		}
		rep.add(res)
	}
	if pts := rep.capsPoints(capsLines[0][0]); len(pts) != 3 || pts[0] != (point{1, 10}) {
		t.Errorf("points %v; want the medians, 10 at 1, 2 and 3 s", pts)
	}
	dir := t.TempDir()
	paths, err := rep.WriteCharts(dir)
	if err != nil || len(paths) != 1 || filepath.Base(paths[0]) != capsChart.file {
		t.Fatalf("wrote %v, %v; want the caps chart alone", paths, err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil || !strings.Contains(string(b), "the cap") || !strings.Contains(string(b), capsLines[1][1]) {
		t.Errorf("the chart lacks its lines: %v", err)
	}

	if _, err := (&Report{}).WriteCharts(t.TempDir()); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty report's charts: %v; want an error saying there is nothing to chart", err)
	}
}

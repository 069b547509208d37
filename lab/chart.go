package lab

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"largo"
)

// chart is one SVG chart of the download scenario: a figure against
// concurrency, one line per server.
type chart struct {
	file, title, yLabel, key string
	log                      bool // logarithmic y axis
}

var charts = []chart{
	{"download-peak-rss.svg", "Peak RSS during concurrent downloads", "peak RSS, MiB (log scale)", keyPeak, true},
	{"download-throughput.svg", "Aggregate throughput of concurrent downloads", "MB/s", keyMBps, false},
	{"download-cpu-per-gib.svg", "Server CPU time per GiB sent", "CPU seconds per GiB", keyCPUPerGiB, false},
}

// WriteCharts writes the download scenario's charts as SVG files into dir
// and returns their paths; a chart no server has figures for is left out. Only repetitions that went as planned are
// plotted: a server killed by the guard has no point at that concurrency.
func (rep *Report) WriteCharts(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var servers []string
	seen := map[string]bool{}
	for _, r := range rep.Rows {
		if r.Scenario == downloadScenario.name && !seen[r.Server] {
			seen[r.Server] = true
			servers = append(servers, r.Server)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no download results to chart")
	}
	var written []string
	for _, c := range charts {
		p := plot.New()
		p.Title.Text = c.title
		p.X.Label.Text = "concurrent downloads of one " + largo.FormatSize(rep.Settings.Size) + " file"
		p.Y.Label.Text = c.yLabel
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(14)
		if c.log {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		p.X.Tick.Marker = concurrencyTicks(rep.Settings.Concurrency)
		var lines []any
		lo, hi := math.Inf(1), 0.0
		for _, s := range servers {
			pts := rep.points(s, c.key)
			if len(pts) == 0 {
				continue
			}
			for _, pt := range pts {
				lo, hi = min(lo, pt.Y), max(hi, pt.Y)
			}
			lines = append(lines, s, pts)
		}
		if len(lines) == 0 {
			continue // no server has this figure
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return written, err
		}
		// Room for the legend above the lines, and the whole x range.
		if c.log && hi > 0 {
			p.Y.Min, p.Y.Max = math.Pow(10, math.Floor(math.Log10(lo))), hi*40
		} else {
			p.Y.Min, p.Y.Max = 0, hi*(1.2+0.1*float64(len(lines)/2))
		}
		p.X.Min, p.X.Max = 0, float64(slices.Max(rep.Settings.Concurrency))*1.05
		path := filepath.Join(dir, c.file)
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// points returns a server's medians of key over the download cases, from
// the repetitions that went as planned.
func (rep *Report) points(server, key string) plotter.XYs {
	var pts plotter.XYs
	for _, c := range rep.Settings.Concurrency {
		var vs []float64
		for _, r := range rep.Results {
			if r.Scenario == downloadScenario.name && r.Server == server && r.Case == strconv.Itoa(c) && r.Outcome == OK {
				if v, ok := r.Values[key]; ok && v > 0 {
					vs = append(vs, v)
				}
			}
		}
		if len(vs) > 0 {
			pts = append(pts, plotter.XY{X: float64(c), Y: Percentile(vs, 50)})
		}
	}
	return pts
}

// concurrencyTicks marks exactly the measured concurrency levels.
type concurrencyTicks []int

// Ticks returns a tick for each level between lo and hi (plot.Ticker).
func (t concurrencyTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, c := range t {
		if float64(c) >= lo && float64(c) <= hi {
			ticks = append(ticks, plot.Tick{Value: float64(c), Label: strconv.Itoa(c)})
		}
	}
	return ticks
}

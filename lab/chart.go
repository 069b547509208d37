package lab

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	svg "github.com/ajstarks/svgo"

	"largo"
)

// The charts are drawn with svgo, a small SVG writer, and the scales are
// computed here. (A plotting package such as gonum's would parse its fonts
// in its package initialiser, which every largo process runs, serve
// included: about 3 MiB resident for charts that only the lab draws.)

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

// point is one median of a figure at one concurrency.
type point struct{ x, y float64 }

// series is one server's line.
type series struct {
	name string
	pts  []point
}

// WriteCharts writes the charts of the download scenario, and of the caps
// and distance scenarios, as SVG files into dir and returns their paths;
// a chart no server has figures for is left out. Only repetitions that went as
// planned are plotted: a server killed by the guard has no point at that
// concurrency.
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
	var written []string
	caps := filepath.Join(dir, capsChart.file)
	if ok, err := rep.writeCapsChart(caps); ok {
		if err != nil {
			return written, err
		}
		written = append(written, caps)
	}
	dist, err := rep.writeDistanceCharts(dir)
	written = append(written, dist...)
	if err != nil {
		return written, err
	}
	if len(servers) == 0 {
		if len(written) > 0 {
			return written, nil
		}
		return nil, fmt.Errorf("no download, caps or distance results to chart")
	}
	for _, c := range charts {
		var lines []series
		for _, s := range servers {
			if pts := rep.points(s, c.key); len(pts) > 0 {
				lines = append(lines, series{s, pts})
			}
		}
		if len(lines) == 0 {
			continue // no server has this figure
		}
		path := filepath.Join(dir, c.file)
		f, err := os.Create(path)
		if err != nil {
			return written, err
		}
		xLabel := "concurrent downloads of one " + largo.FormatSize(rep.Settings.Size) + " file"
		drawChart(svg.New(f), c, xLabel, rep.Settings.Concurrency, lines)
		if err := f.Close(); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// points returns a server's medians of key over the download cases, from
// the repetitions that went as planned.
func (rep *Report) points(server, key string) []point {
	var pts []point
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
			pts = append(pts, point{float64(c), Percentile(vs, 50)})
		}
	}
	return pts
}

// The chart's geometry, in SVG pixels.
const (
	chartW, chartH             = 720, 450
	marginL, marginR           = 80, 24
	marginT, marginB           = 56, 64
	plotW, plotH               = chartW - marginL - marginR, chartH - marginT - marginB
	textStyle                  = "font-family:sans-serif;font-size:13px;fill:#222"
	legendRow, legendX, legend = 18, marginL + 14, marginT + 18
)

// palette holds one colour per server, in order; markers tell lines apart
// where colours are not seen.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

// drawChart draws one line chart: concurrency levels on x, the figure on y
// (logarithmic for c.log), a line and markers per server, and a legend.
func drawChart(s *svg.SVG, c chart, xLabel string, levels []int, lines []series) {
	lo, hi := math.Inf(1), 0.0
	for _, l := range lines {
		for _, p := range l.pts {
			lo, hi = min(lo, p.y), max(hi, p.y)
		}
	}
	xMax := float64(slices.Max(levels)) * 1.05
	// Room above the lines for the legend.
	yMin, yMax := 0.0, hi*(1.25+0.08*float64(len(lines)))
	if c.log {
		yMin, yMax = math.Pow(10, math.Floor(math.Log10(lo))), hi*40
	}
	x := func(v float64) int { return marginL + int(v/xMax*plotW) }
	y := func(v float64) int {
		f := (v - yMin) / (yMax - yMin)
		if c.log {
			f = (math.Log10(v) - math.Log10(yMin)) / (math.Log10(yMax) - math.Log10(yMin))
		}
		return marginT + plotH - int(f*plotH)
	}

	s.Start(chartW, chartH)
	s.Rect(0, 0, chartW, chartH, "fill:#fff")
	s.Text(chartW/2, 28, c.title, textStyle+";font-size:16px;text-anchor:middle")
	// Grid and ticks.
	for _, t := range yTicks(yMin, yMax, c.log) {
		s.Line(marginL, y(t), marginL+plotW, y(t), "stroke:#e4e4e4")
		s.Text(marginL-8, y(t)+4, formatTick(t), textStyle+";text-anchor:end")
	}
	for _, l := range levels {
		s.Line(x(float64(l)), marginT+plotH, x(float64(l)), marginT+plotH+5, "stroke:#222")
		s.Text(x(float64(l)), marginT+plotH+20, strconv.Itoa(l), textStyle+";text-anchor:middle")
	}
	s.Line(marginL, marginT, marginL, marginT+plotH, "stroke:#222")
	s.Line(marginL, marginT+plotH, marginL+plotW, marginT+plotH, "stroke:#222")
	s.Text(marginL+plotW/2, chartH-16, xLabel, textStyle+";text-anchor:middle")
	s.Text(20, marginT+plotH/2, c.yLabel, fmt.Sprintf("%s;text-anchor:middle", textStyle), fmt.Sprintf(`transform="rotate(-90 20 %d)"`, marginT+plotH/2))
	// Lines, markers and the legend.
	for i, l := range lines {
		color := palette[i%len(palette)]
		xs, ys := make([]int, len(l.pts)), make([]int, len(l.pts))
		for j, p := range l.pts {
			xs[j], ys[j] = x(p.x), y(p.y)
		}
		s.Polyline(xs, ys, "fill:none;stroke-width:2;stroke:"+color)
		for j := range xs {
			marker(s, i, xs[j], ys[j], color)
		}
		ly := legend + i*legendRow
		s.Line(legendX, ly, legendX+24, ly, "stroke-width:2;stroke:"+color)
		marker(s, i, legendX+12, ly, color)
		s.Text(legendX+32, ly+4, l.name, textStyle)
	}
	s.End()
}

// marker draws the i-th series' marker: a circle, square or diamond.
func marker(s *svg.SVG, i, x, y int, color string) {
	style := "fill:" + color
	switch i % 3 {
	case 0:
		s.Circle(x, y, 4, style)
	case 1:
		s.Rect(x-4, y-4, 8, 8, style)
	default:
		s.Polygon([]int{x, x + 5, x, x - 5}, []int{y - 5, y, y + 5, y}, style)
	}
}

// yTicks returns the values to mark between lo and hi: powers of ten on
// a log scale, else about five round steps.
func yTicks(lo, hi float64, log bool) []float64 {
	var ticks []float64
	if log {
		for v := lo; v <= hi; v *= 10 {
			ticks = append(ticks, v)
		}
		return ticks
	}
	step := math.Pow(10, math.Floor(math.Log10(hi/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if hi/(step*m) <= 6 {
			step *= m
			break
		}
	}
	for v := lo; v <= hi; v += step {
		ticks = append(ticks, v)
	}
	return ticks
}

// formatTick writes a tick's value without needless digits.
func formatTick(v float64) string {
	if v >= 1 || v == 0 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

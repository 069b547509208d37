package lab

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	svg "github.com/ajstarks/svgo"

	"largo"
)

// The caps scenario measures largo's bandwidth caps (--rate-per-address,
// a user's rate in the access file) from outside: the rates clients get,
// second by second, beside the cap, and what pacing costs in CPU. Only
// largo has caps of this kind, so only largo takes part.

// Its figures.
const (
	capsConns   = 8     // connections of each case
	capsLow     = 10e6  // the cap held to, bytes per second (10 MB/s)
	capsHigh    = 400e6 // the cap of the CPU comparison (400 MB/s)
	capsWindow  = 10 * time.Second
	capsQuickW  = 3 * time.Second
	capsTick    = time.Second // the rate series' step
	capsUserTok = "capped-user-token-0123456789"
	capsFreeTok = "uncapped-user-token-0123456789"
)

// The cases.
const (
	capsUncapped = "uncapped, 8 connections"
	capsHighCase = "400 MB/s per address, 8 connections"
	capsLowCase  = "10 MB/s per address, 8 connections"
	capsSideCase = "10 MB/s user beside an uncapped one, 4 + 4"
)

// Keys of the caps scenario's figures.
const (
	keyCap       = "cap_mb_per_s"
	keyOff       = "off_percent"
	keyCapped    = "capped_mb_per_s"
	keyUncapped  = "uncapped_mb_per_s"
	keyThrottled = "throttled_s"
	// capsSeries prefixes the rate series: capsSeries+GROUP+"@"+seconds.
	capsSeries = "series:"
)

var capsScenario = &scenario{
	name:     "caps",
	caseHead: "case",
	about: func(s Settings) string {
		return fmt.Sprintf("largo's bandwidth caps. Eight connections from one address download the %s file: without a cap, each once; under --rate-per-address 400MB, each once (the CPU a cap costs, per GiB sent); under --rate-per-address 10MB, again and again for the window. Then two users side by side, four connections each, for the window: one with rate = \"10MB\" in the access file, one without a cap. MB/s is what the clients received over the whole run (the first burst included); off %% is its distance from the cap; throttled s is what the server's metrics say its transfers waited. Other servers do not take part.", largo.FormatSize(s.Size))
	},
	cases: func(Config) []string { return []string{capsUncapped, capsHighCase, capsLowCase, capsSideCase} },
	columns: []column{
		colMBps,
		{key: keyCap, head: "cap MB/s", digits: 0},
		{key: keyOff, head: "off %", digits: 1},
		{key: keyCapped, head: "capped MB/s", digits: 1},
		{key: keyUncapped, head: "uncapped MB/s", digits: 0},
		colCPUPerGiB,
		{key: keyThrottled, head: "throttled s", digits: 1},
		colAbove,
	},
	run: runCaps,
}

// capsAccess is the access file of the side-by-side case: everyone reads,
// one user is capped.
const capsAccess = `[[user]]
name = "capped"
tokens = ["` + capsUserTok + `"]
rate = "10MB"

[[user]]
name = "uncapped"
tokens = ["` + capsFreeTok + `"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]
`

func runCaps(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	if srv.Name != "largo" || !strings.Contains(srv.Command, "{exe} serve") {
		res.fail(fmt.Errorf("%w: bandwidth caps are largo's", errUnsupported))
		return res
	}
	capped := srv
	capped.Upload, capped.Hostile = "", ""
	capped.Command += " --admin-listen 127.0.0.1:0" // where the metrics are read
	switch cs {
	case capsHighCase:
		capped.Command += " --rate-per-address 400MB"
		res.set(keyCap, capsHigh/1e6)
	case capsLowCase:
		capped.Command += " --rate-per-address 10MB"
		res.set(keyCap, capsLow/1e6)
	case capsSideCase:
		capped.Command += " --access {tmp}/access.toml"
		capped.Files = map[string]string{"access.toml": capsAccess}
		res.set(keyCap, capsLow/1e6)
	}
	f := r.data.random
	in, idle := r.begin(ctx, capped, r.data.dir, false, &res, f.path)
	if in == nil {
		return res
	}
	tr := &http.Transport{
		DisableCompression:  true,
		MaxIdleConnsPerHost: capsConns,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	url := in.base + f.name

	window := capsWindow
	if r.cfg.Quick {
		window = capsQuickW
	}
	var groups []*capsGroup
	once := false
	switch cs {
	case capsUncapped, capsHighCase:
		groups, once = []*capsGroup{{name: "8 connections", conns: capsConns}}, true
		window = transferTimeout(f.size * capsConns)
	case capsLowCase:
		groups = []*capsGroup{{name: "8 connections, one address", conns: capsConns}}
	case capsSideCase:
		groups = []*capsGroup{
			{name: "capped user, 4 connections", conns: capsConns / 2, token: capsUserTok},
			{name: "uncapped user, 4 connections", conns: capsConns / 2, token: capsFreeTok},
		}
	}
	wall, err := capsRun(ctx, cl, url, f.size, groups, window, once)
	res.fail(err)
	var sent int64
	for _, g := range groups {
		sent += g.bytes.Load()
		for i, v := range g.series {
			res.set(fmt.Sprintf("%s%s@%g", capsSeries, g.name, float64(i+1)*capsTick.Seconds()), v)
		}
		for i, v := range g.oneSeries {
			res.set(fmt.Sprintf("%s%s@%g", capsSeries, oneOf(g), float64(i+1)*capsTick.Seconds()), v)
		}
	}
	res.set(keyWall, wall.Seconds())
	res.set(keyMBps, float64(sent)/1e6/wall.Seconds())
	if c, ok := res.Values[keyCap]; ok {
		got := float64(groups[0].bytes.Load()) / 1e6 / wall.Seconds()
		res.set(keyOff, (got-c)/c*100)
	}
	if cs == capsSideCase {
		res.set(keyCapped, float64(groups[0].bytes.Load())/1e6/wall.Seconds())
		res.set(keyUncapped, float64(groups[1].bytes.Load())/1e6/wall.Seconds())
	}
	if t, err := throttledSeconds(ctx, cl, in.admin); err == nil {
		res.set(keyThrottled, t)
	} else {
		res.fail(err)
	}
	r.end(in, idle, &res, sent)
	return res
}

// capsGroup is one client: its connections, its credential, the bytes it
// received and its rate, step by step, and those of its first connection.
type capsGroup struct {
	name      string
	conns     int
	token     string
	bytes     atomic.Int64
	one       atomic.Int64 // the bytes of its first connection
	series    []float64    // MB/s over each capsTick
	oneSeries []float64    // the same, of its first connection
}

// oneOf names the series of g's first connection.
func oneOf(g *capsGroup) string { return "one of its connections: " + g.name }

// capsRun runs the groups' connections at once, each downloading url (of
// size bytes) once with once, else again and again until window has
// passed, and returns how long they ran. The groups' series are sampled
// every capsTick within the window (a window runs half a tick longer, so
// that its last tick is not raced by its end).
func capsRun(ctx context.Context, cl *http.Client, url string, size int64, groups []*capsGroup, window time.Duration, once bool) (time.Duration, error) {
	ticks := int(window / capsTick)
	if !once {
		window += capsTick / 2
	}
	ctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	start := time.Now()
	for _, g := range groups {
		for c := range g.conns {
			wg.Go(func() {
				for {
					err := capsFetch(ctx, cl, url, size, g, c == 0)
					if ctx.Err() != nil && !once {
						return // the window is over
					}
					if err != nil {
						errMu.Lock()
						first = cmp.Or(first, err)
						errMu.Unlock()
						return
					}
					if once {
						return
					}
				}
			})
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(capsTick)
	defer tick.Stop()
	last := make([][2]int64, len(groups))
	for {
		select {
		case <-done:
			return time.Since(start), first
		case <-tick.C:
			if len(groups[0].series) == ticks {
				continue
			}
			for i, g := range groups {
				n, one := g.bytes.Load(), g.one.Load()
				g.series = append(g.series, float64(n-last[i][0])/1e6/capsTick.Seconds())
				g.oneSeries = append(g.oneSeries, float64(one-last[i][1])/1e6/capsTick.Seconds())
				last[i] = [2]int64{n, one}
			}
		}
	}
}

// capsFetch downloads url once for g, counting the bytes as they come
// (those of g's first connection, with first, also apart).
func capsFetch(ctx context.Context, cl *http.Client, url string, size int64, g *capsGroup, first bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if g.token != "" {
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	buf := make([]byte, 256<<10)
	var got int64
	for {
		n, err := resp.Body.Read(buf)
		got += int64(n)
		g.bytes.Add(int64(n))
		if first {
			g.one.Add(int64(n))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if got != size {
		return fmt.Errorf("GET %s: %d of %d bytes", url, got, size)
	}
	return nil
}

// throttledSeconds reads the server's largo_throttled_seconds_total,
// summed over its kinds of cap, on its admin listener (base): the
// metrics are the operator's.
func throttledSeconds(ctx context.Context, cl *http.Client, base string) (float64, error) {
	if base == "" {
		return 0, errors.New("metrics: the server has no admin listener")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"_largo/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "largo_throttled_seconds_total{") {
			continue
		}
		_, v, _ := strings.Cut(line, "} ")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("metrics: %q", line)
		}
		sum += f
		found = true
	}
	if !found {
		return 0, fmt.Errorf("metrics: no largo_throttled_seconds_total (%s)", resp.Status)
	}
	return sum, sc.Err()
}

// capsChart is the chart of the caps scenario: the rates the capped
// clients of the windowed cases got, second by second, beside the cap.
var capsChart = chart{"caps-rates.svg", "Clients under a bandwidth cap of 10 MB/s", "MB/s received over each second", "", false}

// The series capsChart draws, with their labels: the 8 connections of one
// address, one of them, and the capped user's 4 connections.
var capsLines = [][2]string{
	{"8 connections, one address", "8 connections of one address, together"},
	{"one of its connections: 8 connections, one address", "one of those 8 connections"},
	{"capped user, 4 connections", "the capped user's 4 connections, together"},
}

// writeCapsChart draws capsChart into path from the report's caps
// results, and reports whether there were any.
func (rep *Report) writeCapsChart(path string) (bool, error) {
	var lines []series
	for _, l := range capsLines {
		if pts := rep.capsPoints(l[0]); len(pts) > 0 {
			lines = append(lines, series{l[1], pts})
		}
	}
	if len(lines) == 0 {
		return false, nil
	}
	end := 0.0
	for _, l := range lines {
		end = max(end, l.pts[len(l.pts)-1].x)
	}
	lines = append(lines, series{"the cap", []point{{0, capsLow / 1e6}, {end, capsLow / 1e6}}})
	levels := make([]int, 0, int(end)+1)
	for s := 0; s <= int(end); s++ {
		levels = append(levels, s)
	}
	f, err := os.Create(path)
	if err != nil {
		return true, err
	}
	drawChart(svg.New(f), capsChart, "seconds since the clients started", levels, lines)
	return true, f.Close()
}

// capsPoints returns the medians, over the repetitions that went as
// planned, of a client's rate series, step by step.
func (rep *Report) capsPoints(name string) []point {
	prefix := capsSeries + name + "@"
	at := map[float64][]float64{}
	for _, r := range rep.Results {
		if r.Scenario != capsScenario.name || r.Outcome != OK {
			continue
		}
		for k, v := range r.Values {
			if t, ok := strings.CutPrefix(k, prefix); ok {
				if x, err := strconv.ParseFloat(t, 64); err == nil {
					at[x] = append(at[x], v)
				}
			}
		}
	}
	var pts []point
	for x, vs := range at {
		pts = append(pts, point{x, Percentile(vs, 50)})
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.x, b.x) })
	return pts
}

package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	svg "github.com/ajstarks/svgo"

	"largo"
	"largo/client"
)

// The distance scenario measures transfers over a long path, where one
// TCP stream is held to a fraction of the line: every other figure of the
// lab is taken on loopback, where one stream fills the pipe. A shaper
// (shaper.go) between the client and a largo server on a folder gives
// each connection a round trip and a cap of its own; largo get and largo
// put, at -j 1, 4 and 8, cross it beside curl and rclone. Only largo
// serves.

// distanceJobs are the -j of largo get and largo put.
var distanceJobs = []int{1, 4, 8}

// Keys of the distance scenario's figures.
const (
	keyConns  = "connections"
	keyJoined = "final_request_s"
)

// distanceCase is one transfer of the scenario.
type distanceCase struct {
	client string // largo, curl or rclone
	verb   string // get or put
	jobs   int    // largo's -j; 0 for the others
	size   int64  // the file's size; 0: the lab's data file
	rtt    time.Duration
}

// String names the case in the report: "largo put -j 8, 50 ms".
func (c distanceCase) String() string {
	s := c.client + " " + c.verb
	if c.jobs > 0 {
		s += " -j " + strconv.Itoa(c.jobs)
	}
	if c.size > 0 {
		s += ", " + sizeName(c.size)
	}
	return s + ", " + rttName(c.rtt)
}

// rttName writes a round trip in milliseconds: "50 ms".
func rttName(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
}

// rttMillis converts round trips to the milliseconds of Settings.
func rttMillis(ds []time.Duration) []float64 {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	return ms
}

// rateName writes a rate in MB (10^6) per second: "16 MB/s".
func rateName(r int64) string {
	return strconv.FormatFloat(float64(r)/1e6, 'f', -1, 64) + " MB/s"
}

// bigSize is the size of the file whose final request is compared with
// the data file's: 8 times it, twice with Quick.
func bigSize(size int64, quick bool) int64 {
	if quick {
		return 2 * size
	}
	return 8 * size
}

// distanceCases are the scenario's transfers: at each round trip, largo
// get at each -j, curl and rclone, then the same for put; and last,
// largo put -j 8 of the big file at the first round trip. Quick keeps
// the first round trip, -j 1 and -j 8, and curl.
func distanceCases(rtts []time.Duration, size int64, quick bool) []distanceCase {
	jobs := distanceJobs
	if quick {
		jobs = []int{jobs[0], jobs[len(jobs)-1]}
		rtts = rtts[:min(len(rtts), 1)]
	}
	var cs []distanceCase
	for _, rtt := range rtts {
		for _, verb := range []string{"get", "put"} {
			for _, j := range jobs {
				cs = append(cs, distanceCase{client: "largo", verb: verb, jobs: j, rtt: rtt})
			}
			cs = append(cs, distanceCase{client: "curl", verb: verb, rtt: rtt})
			if !quick {
				cs = append(cs, distanceCase{client: "rclone", verb: verb, rtt: rtt})
			}
		}
	}
	if len(rtts) > 0 {
		cs = append(cs, distanceCase{client: "largo", verb: "put", jobs: jobs[len(jobs)-1], size: bigSize(size, quick), rtt: rtts[0]})
	}
	return cs
}

var distanceScenario = &scenario{
	name:     "distance",
	caseHead: "client, round trip",
	about:    distanceAbout,
	cases: func(cfg Config) []string {
		var names []string
		for _, c := range distanceCases(cfg.RTTs, cfg.Size, cfg.Quick) {
			names = append(names, c.String())
		}
		return names
	},
	columns: []column{
		{key: keyConns, head: "connections", digits: 0},
		colWall, colMBps,
		{key: keyJoined, head: "final request s", digits: 2},
		colCPUPerGiB, colAbove,
	},
	run: runDistance,
}

func distanceAbout(s Settings) string {
	var rtts []string
	for _, ms := range s.RTTMillis {
		rtts = append(rtts, rttName(time.Duration(ms*float64(time.Millisecond))))
	}
	path := fmt.Sprintf("each connection capped at %s each way", rateName(s.StreamRate))
	if s.StreamWindow > 0 {
		path += fmt.Sprintf(", with a window of %s (at most a window per round trip)", largo.FormatSize(s.StreamWindow))
	}
	return fmt.Sprintf("Transfers of the %s file over a long path: a TCP proxy in the lab, between the client and largo serving a folder, delays each connection's bytes by half the round trip each way (%s; a new connection pays its handshake too), %s. "+
		"largo get -j N downloads in N ranged requests at once; largo put -j N sends the file as N tus partial uploads at once, then one final request joins them (final request s: how long the server took to answer it, from largo put's summary). "+
		"curl sends one GET or PUT; rclone copies with its http backend (in ranged streams of its own above 256 MiB) and uploads by WebDAV. "+
		"Connections: the most open at once through the path. The last case, largo put of a %s sparse file, shows whether the final request grows with the file. Other servers do not take part.",
		largo.FormatSize(s.Size), strings.Join(rtts, " and "), path, largo.FormatSize(bigSize(s.Size, s.Quick)))
}

func runDistance(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	if srv.Name != "largo" || !strings.Contains(srv.Command, "{exe} serve") {
		res.fail(fmt.Errorf("%w: the distance scenario measures clients of largo's server", errUnsupported))
		return res
	}
	var dc distanceCase
	found := false
	for _, c := range distanceCases(r.cfg.RTTs, r.cfg.Size, r.cfg.Quick) {
		if c.String() == cs {
			dc, found = c, true
		}
	}
	if !found {
		res.fail(fmt.Errorf("lab: no distance case %q", cs))
		return res
	}
	prog, err := distanceProgram(dc.client, r.cfg.Exe)
	if err != nil {
		res.fail(err)
		return res
	}
	f := r.data.random
	var warmed []string
	if dc.size > 0 {
		// Holes, read by the client: not worth the page cache.
		if f, err = r.data.sparse("sparse-"+sizeName(dc.size)+".img", dc.size); err != nil {
			res.fail(fmt.Errorf("lab: %v", err))
			return res
		}
	} else {
		warmed = append(warmed, f.path)
	}
	// One server for every case: writes open, WebDAV for rclone's
	// uploads; a put's server serves the case's empty scratch folder.
	dsrv := Server{Name: srv.Name, Command: srv.Command + " --upload-open --webdav", PrintsURL: srv.PrintsURL}
	dsrv.Upload = dsrv.Command
	one := r.single(ctx, dsrv, &res, dc.verb == "put", distanceTimeout(f.size, r.cfg.StreamRate), warmed...)
	if one == nil {
		return res
	}
	moved := r.distanceRun(one, dc, prog, f, &res)
	one.end(r, &res, moved)
	return res
}

// distanceRun makes the transfer of dc with prog, through a shaper in
// front of the server of one, checks what arrived and records its
// figures in res; it returns the bytes moved.
func (r *runner) distanceRun(one *single, dc distanceCase, prog string, f dataFile, res *Result) int64 {
	home, err := os.MkdirTemp("", "largo-bench-client-")
	if err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return 0
	}
	defer os.RemoveAll(home)
	sh, err := startShaper(one.in.addr, shapedPath{RTT: dc.rtt, Rate: r.cfg.StreamRate, Window: r.cfg.StreamWindow})
	if err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return 0
	}
	t := distanceTransfer{c: dc, prog: prog, base: "http://" + sh.addr() + "/", f: f, home: home}
	if dc.verb == "put" {
		t.stored = filepath.Join(one.scratch, distanceUpName)
	} else {
		t.got = filepath.Join(home, "got.bin")
	}
	start := time.Now()
	joined, err := t.run(one.ctx)
	wall := time.Since(start)
	sh.close()
	res.set(keyConns, float64(sh.peakConns()))
	if err == nil {
		err = t.check()
	}
	if err != nil {
		res.fail(err)
		return 0
	}
	res.set(keyWall, wall.Seconds())
	res.set(keyMBps, float64(f.size)/1e6/wall.Seconds())
	if joined > 0 {
		res.set(keyJoined, joined.Seconds())
	} else if dc.client == "largo" && dc.verb == "put" && dc.jobs > 1 && f.size >= client.MinParallel {
		res.fail(errors.New("largo put's summary names no final request: the file went as one stream"))
	}
	return f.size
}

// distanceProgram finds the client's program: largo is the lab's own
// binary; a missing curl or rclone makes the case unsupported.
func distanceProgram(name, exe string) (string, error) {
	switch name {
	case "largo":
		return exe, nil
	case "curl":
		p, err := lookCurl()
		if err != nil {
			return "", fmt.Errorf("%w: curl not found (apt-get install curl)", errUnsupported)
		}
		return p, nil
	}
	prog := presetPrograms[name]
	p, err := exec.LookPath(prog[0])
	if err != nil {
		return "", fmt.Errorf("%w: %s not found (apt-get install %s)", errUnsupported, prog[0], prog[1])
	}
	return p, nil
}

// distanceTimeout bounds a transfer of size bytes over one stream capped
// at rate, generously.
func distanceTimeout(size, rate int64) time.Duration {
	return time.Minute + time.Duration(3*float64(size)/float64(rate)*float64(time.Second))
}

// distanceUpName is the name every upload is stored under.
const distanceUpName = "up.bin"

// distanceTransfer is one case's transfer, through the shaper at base.
type distanceTransfer struct {
	c      distanceCase
	prog   string
	base   string
	f      dataFile
	home   string // the client's home and cache
	got    string // where a download is written
	stored string // where the server stores an upload
}

// joinedLine finds the final request's time in largo put's summary.
var joinedLine = regexp.MustCompile(`joined by the server in ([0-9.]+[a-zµ]+)`)

// run makes the transfer and returns, for a parallel largo put, how long
// the server took to answer its final request.
func (t *distanceTransfer) run(ctx context.Context) (time.Duration, error) {
	url := t.base + t.f.name
	if t.c.verb == "put" {
		url = t.base + distanceUpName
	}
	var args, env []string
	switch t.c.client + " " + t.c.verb {
	case "largo get":
		args = []string{"get", "-j", strconv.Itoa(t.c.jobs), "-o", t.got, url}
	case "largo put":
		args = []string{"put", "-j", strconv.Itoa(t.c.jobs), t.f.path, url}
	case "curl get":
		return 0, curlClient{}.fetch(ctx, fetchReq{url: url, out: t.got}).check(http.StatusOK, t.f.size)
	case "curl put":
		fr := curlClient{}.fetch(ctx, fetchReq{method: http.MethodPut, url: url, upload: t.f.path})
		if fr.err == nil && (fr.status < 200 || fr.status > 299) {
			return 0, fmt.Errorf("curl: answered %d %s", fr.status, http.StatusText(fr.status))
		}
		return 0, fr.err
	case "rclone get":
		args = []string{"copyto", ":http:" + t.f.name, t.got}
		env = []string{"RCLONE_HTTP_URL=" + t.base}
	case "rclone put":
		args = []string{"copyto", t.f.path, ":webdav:" + distanceUpName}
		env = []string{"RCLONE_WEBDAV_URL=" + t.base, "RCLONE_WEBDAV_VENDOR=other"}
	default:
		return 0, fmt.Errorf("lab: no transfer %s %s", t.c.client, t.c.verb)
	}
	cmd := exec.CommandContext(ctx, t.prog, args...)
	cmd.Env = append(clientEnv(t.home), env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	if err != nil {
		why := (&tailBuffer{max: 4096, b: stderr.Bytes()}).lastLine()
		if ctx.Err() != nil {
			why = "timed out"
		}
		return 0, fmt.Errorf("%s %s: %v: %s", t.c.client, t.c.verb, err, why)
	}
	return joinedTime(stderr.Bytes())
}

// joinedTime reads the final request's time from largo put's output: 0
// when it names none (one stream).
func joinedTime(out []byte) (time.Duration, error) {
	m := joinedLine.FindSubmatch(out)
	if m == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(string(m[1]))
	if err != nil {
		return 0, fmt.Errorf("largo put's summary: %q: %v", m[0], err)
	}
	// Rounded to the millisecond, a quick join reads 0s: still a join.
	return max(d, time.Nanosecond), nil
}

// check compares what arrived with the file: its size, and its sha256
// when the file has one (not a sparse one).
func (t *distanceTransfer) check() error {
	path, what := t.got, "the downloaded file"
	if t.stored != "" {
		path, what = t.stored, "the stored file"
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if fi.Size() != t.f.size {
		return fmt.Errorf("%s has %s of %s", what, mb(fi.Size()), mb(t.f.size))
	}
	if t.f.sha == "" {
		return nil
	}
	if sum, err := fileSHA(path); err != nil || sum != t.f.sha {
		return fmt.Errorf("%s differs from the original (%v)", what, err)
	}
	return nil
}

// clientEnv is the environment of a client process: this one's, without
// largo's and rclone's own settings (a token, a remote), with home the
// client's home, cache and configuration (largo put remembers its uploads
// in the cache).
func clientEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "LARGO_"), strings.HasPrefix(kv, "RCLONE_"),
			strings.HasPrefix(kv, "HOME="), strings.HasPrefix(kv, "XDG_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "RCLONE_CONFIG="+os.DevNull)
}

// distanceCharts are the scenario's charts: the rate of largo get and
// of largo put by -j, one line per round trip.
var distanceCharts = []chart{
	{"distance-get.svg", "largo get over a long path", "MB/s", keyMBps, false},
	{"distance-put.svg", "largo put over a long path", "MB/s", keyMBps, false},
}

// writeDistanceCharts draws distanceCharts into dir from the report's
// distance results, and returns the paths written (none without
// results).
func (rep *Report) writeDistanceCharts(dir string) ([]string, error) {
	var written []string
	s := rep.Settings
	for i, verb := range []string{"get", "put"} {
		var lines []series
		for _, ms := range s.RTTMillis {
			rtt := time.Duration(ms * float64(time.Millisecond))
			var pts []point
			for _, j := range distanceJobs {
				c := distanceCase{client: "largo", verb: verb, jobs: j, rtt: rtt}
				if v, ok := rep.median(distanceScenario.name, c.String(), keyMBps); ok {
					pts = append(pts, point{float64(j), v})
				}
			}
			if len(pts) > 0 {
				lines = append(lines, series{fmt.Sprintf("largo %s, %s round trip", verb, rttName(rtt)), pts})
			}
		}
		if len(lines) == 0 {
			continue
		}
		if s.StreamRate > 0 {
			var pts []point
			for _, j := range distanceJobs {
				pts = append(pts, point{float64(j), float64(j) * float64(s.StreamRate) / 1e6})
			}
			lines = append(lines, series{"-j times the cap of one connection", pts})
		}
		path := filepath.Join(dir, distanceCharts[i].file)
		f, err := os.Create(path)
		if err != nil {
			return written, err
		}
		xLabel := fmt.Sprintf("-j: connections at once (a %s file, each connection capped at %s)", largo.FormatSize(s.Size), rateName(s.StreamRate))
		drawChart(svg.New(f), distanceCharts[i], xLabel, distanceJobs, lines)
		if err := f.Close(); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// median returns the median of key over the repetitions of a case that
// went as planned, on any server.
func (rep *Report) median(scenario, cs, key string) (float64, bool) {
	var vs []float64
	for _, r := range rep.Results {
		if r.Scenario == scenario && r.Case == cs && r.Outcome == OK {
			if v, ok := r.Values[key]; ok {
				vs = append(vs, v)
			}
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return Percentile(vs, 50), true
}

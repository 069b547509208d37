package lab

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"largo"
)

// scenario is one experiment: its cases (a concurrency, a file, an
// encoding), how to run one case on one fresh server, and its table.
type scenario struct {
	name     string
	caseHead string                // heading of the case column
	about    func(Settings) string // the sentence above the table
	cases    func(Config) []string
	columns  []column
	run      func(ctx context.Context, r *runner, srv Server, cs string) Result
	// once runs the scenario in the first repetition only: its case is
	// too long to repeat (a folder of a million files).
	once bool
}

// scenarios are every scenario, in the order they run.
var scenarios = []*scenario{
	downloadScenario, ceilingScenario, stalledScenario, dripScenario,
	abortScenario, resumeScenario, uploadScenario, compressScenario,
	listingScenario, archiveHeadScenario, hostileScenario, smallScenario, manyScenario, httpsScenario, idleScenario,
	bucketScenario, capsScenario, distanceScenario,
}

// reps is how many repetitions of the scenario a run makes.
func (sc *scenario) reps(cfg Config) int {
	if sc.once {
		return 1
	}
	return cfg.Reps
}

// brief is the progress line's summary of a result: its first figures.
func (sc *scenario) brief(res Result) string {
	var parts []string
	for _, c := range sc.columns {
		if len(parts) == 4 {
			break
		}
		if v, ok := res.Values[c.key]; ok && !c.text {
			parts = append(parts, c.head+" "+strconv.FormatFloat(v, 'f', c.digits, 64))
		} else if t, ok := res.Text[c.key]; ok && c.text {
			parts = append(parts, c.head+" "+t)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// Figures shared by several scenarios, as keys of Result.Values.
const (
	keyWall      = "wall_s"
	keyMBps      = "mb_per_s"
	keyIdle      = "idle_mib"
	keyPeak      = "peak_mib"
	keyAbove     = "above_idle_mib"
	keyCPU       = "cpu_s"
	keyCPUPerGiB = "cpu_s_per_gib"
	keyRead      = "read_mb"
)

var (
	colIdle      = column{key: keyIdle, head: "idle RSS MiB", digits: 1}
	colPeak      = column{key: keyPeak, head: "peak RSS MiB", digits: 1}
	colAbove     = column{key: keyAbove, head: "peak − idle MiB", digits: 1}
	colWall      = column{key: keyWall, head: "wall s", digits: 2}
	colMBps      = column{key: keyMBps, head: "MB/s", digits: 0}
	colCPU       = column{key: keyCPU, head: "CPU s", digits: 2}
	colCPUPerGiB = column{key: keyCPUPerGiB, head: "CPU s/GiB", digits: 2}
)

// begin makes the files resident in the page cache, starts a fresh srv
// serving dir, which must hold the warm-up file, sends it the warm-up
// request (instance.warmUp) and reads its idle figures into res; the peak
// that end reports counts from there, not from the server's start-up. It
// returns nil, with the outcome in res, if the server did not start or did
// not answer the warm-up request.
//
// The idle figures are read at once: once the warm-up's answer and the
// connection's end are read, the RSS and descriptors of largo, the naive
// server, nginx, Caddy and Node read the same at once and seconds later,
// so a pause would only lengthen the run.
func (r *runner) begin(ctx context.Context, srv Server, dir string, upload bool, res *Result, files ...string) (*instance, usage) {
	for _, f := range files {
		if err := warm(f); err != nil {
			res.fail(fmt.Errorf("lab: %v", err))
			return nil, usage{}
		}
	}
	in, err := r.start(ctx, srv, dir, upload)
	if err != nil {
		if upload && srv.Upload != "" {
			// The command that enables uploads is refused: a build
			// without them.
			res.fail(fmt.Errorf("%w (%v)", errUnsupported, err))
		} else {
			res.fail(fmt.Errorf("did not start: %v", err))
		}
		return nil, usage{}
	}
	if err := in.warmUp(r.data.warmUp); err != nil {
		in.stop()
		res.fail(fmt.Errorf("warm-up request: %v", err))
		return nil, usage{}
	}
	in.guard.rebase()
	idle := in.usage()
	res.set(keyIdle, mib(idle.rss))
	return in, idle
}

// end reads the server's figures since idle into res (the peak: see
// instance.peak), with sent the body
// bytes clients received (for CPU per GiB), then stops the server. A
// server that died or was killed overrides any other outcome.
func (r *runner) end(in *instance, idle usage, res *Result, sent int64) usage {
	u := in.usage()
	peak := in.peak(idle, u)
	res.set(keyPeak, mib(peak))
	res.set(keyAbove, mib(peak-idle.rss))
	if err := in.failure(); err != nil {
		// A dead server's counters read as zero: no CPU figures.
		res.Outcome = err.Error()
	} else {
		cpu := u.cpu - idle.cpu
		res.set(keyCPU, cpu.Seconds())
		// Below a MiB (an error page) the ratio would only magnify noise.
		if sent >= 1<<20 {
			res.set(keyCPUPerGiB, cpu.Seconds()/(float64(sent)/(1<<30)))
		}
	}
	in.stop()
	return u
}

// single is a fresh server and one client, for the scenarios of a single
// transfer, with a scratch folder of the lab's.
type single struct {
	in      *instance
	idle    usage
	cl      fetcher
	ctx     context.Context // bounded by the transfer's timeout
	cancel  context.CancelFunc
	scratch string
}

// single makes a scratch folder, starts srv (see begin) serving the data
// folder, or for an upload the scratch folder, empty but for the warm-up
// file, and bounds the
// transfer by timeout. It returns nil, with the outcome in res, if the
// server did not start.
func (r *runner) single(ctx context.Context, srv Server, res *Result, upload bool, timeout time.Duration, files ...string) *single {
	scratch, err := os.MkdirTemp("", "largo-bench-scratch-")
	if err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return nil
	}
	dir := r.data.dir
	if upload {
		dir = scratch
		if _, err := writeWarmUp(scratch); err != nil {
			os.RemoveAll(scratch)
			res.fail(fmt.Errorf("lab: %v", err))
			return nil
		}
	}
	in, idle := r.begin(ctx, srv, dir, upload, res, files...)
	if in == nil {
		os.RemoveAll(scratch)
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	return &single{in: in, idle: idle, cl: r.client(1), ctx: tctx, cancel: cancel, scratch: scratch}
}

// end ends the transfer and the server (see runner.end) and removes the
// scratch folder.
func (s *single) end(r *runner, res *Result, moved int64) {
	s.cancel()
	s.cl.close()
	r.end(s.in, s.idle, res, moved)
	os.RemoveAll(s.scratch)
}

// mib converts bytes to MiB.
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// transferTimeout bounds a transfer of n bytes: generous, so that a slow
// server is measured, yet finite, so that a stuck one is reported.
func transferTimeout(n int64) time.Duration {
	return 30*time.Second + time.Duration(float64(n)/25e6*float64(time.Second))
}

// parallel runs f for 0..n-1 at once and returns the results in order.
func parallel[T any](n int, f func(i int) T) []T {
	out := make([]T, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = f(i) })
	}
	wg.Wait()
	return out
}

// firstErr summarises the failures among errs: nil if none, else the
// first error with how many of how many failed.
func firstErr(errs []error) error {
	var first error
	n := 0
	for _, e := range errs {
		if e != nil {
			if first == nil {
				first = e
			}
			n++
		}
	}
	if first == nil {
		return nil
	}
	if len(errs) == 1 {
		return first
	}
	return fmt.Errorf("%d of %d failed: %v", n, len(errs), first)
}

var downloadScenario = &scenario{
	name:     "download",
	caseHead: "concurrent",
	about: func(s Settings) string {
		return fmt.Sprintf("Concurrent downloads of one %s file, resident in the page cache. MB/s is the aggregate; CPU s/GiB is the server's CPU time per GiB sent, the steadiest figure on a shared machine.", largo.FormatSize(s.Size))
	},
	cases: func(cfg Config) []string {
		var cs []string
		for _, c := range cfg.Concurrency {
			cs = append(cs, strconv.Itoa(c))
		}
		return cs
	},
	columns: []column{colWall, colMBps, colIdle, colPeak, colAbove, colCPU, colCPUPerGiB},
	run:     runDownload,
}

func runDownload(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	n, err := strconv.Atoi(cs)
	if err != nil {
		res.fail(err)
		return res
	}
	f := r.data.random
	in, idle := r.begin(ctx, srv, r.data.dir, false, &res, f.path)
	if in == nil {
		return res
	}
	cl := r.client(n)
	defer cl.close()
	tctx, cancel := context.WithTimeout(ctx, transferTimeout(f.size*int64(n)))
	defer cancel()
	start := time.Now()
	results := parallel(n, func(int) fetchResult { return cl.fetch(tctx, fetchReq{url: in.base + f.name}) })
	wall := time.Since(start)
	var sent int64
	errs := make([]error, n)
	for i, fr := range results {
		sent += fr.bytes
		errs[i] = fr.check(200, f.size)
	}
	res.set(keyWall, wall.Seconds())
	res.set(keyMBps, float64(sent)/1e6/wall.Seconds())
	res.fail(firstErr(errs))
	r.end(in, idle, &res, sent)
	return res
}

var ceilingScenario = &scenario{
	name:     "ceiling",
	caseHead: "file",
	about: func(Settings) string {
		return "Sparse files just past 2 GiB (the largest buffer some runtimes allow) and past 4 GiB, downloaded whole: served, or failed and how."
	},
	cases: func(cfg Config) []string {
		sizes := ceilingSizes
		if cfg.Quick {
			sizes = sizes[:1] // the 5 GiB file takes a while even from holes
		}
		var cs []string
		for _, s := range sizes {
			cs = append(cs, sizeName(s))
		}
		return cs
	},
	columns: []column{
		{key: "status", head: "answer", text: true},
		{key: "got_gib", head: "received GiB", digits: 3},
		colWall, colMBps, colIdle, colPeak, colCPUPerGiB,
	},
	run: runCeiling,
}

func runCeiling(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	var f dataFile
	for _, c := range r.data.ceiling {
		if sizeName(c.size) == cs {
			f = c
		}
	}
	// Holes are read as zero pages the first reader puts in the page
	// cache: read them first, or the first server pays for everyone.
	one := r.single(ctx, srv, &res, false, transferTimeout(f.size), f.path)
	if one == nil {
		return res
	}
	start := time.Now()
	fr := one.cl.fetch(one.ctx, fetchReq{url: one.in.base + f.name})
	wall := time.Since(start)
	err := fr.check(200, f.size)
	switch {
	case err == nil:
		res.note("status", "served whole")
	case fr.status == 0:
		res.note("status", "no answer")
	default:
		res.note("status", fmt.Sprintf("%d %s", fr.status, http.StatusText(fr.status)))
	}
	res.set("got_gib", float64(fr.bytes)/(1<<30))
	res.set(keyWall, wall.Seconds())
	res.set(keyMBps, float64(fr.bytes)/1e6/wall.Seconds())
	res.fail(err)
	one.end(r, &res, fr.bytes)
	return res
}

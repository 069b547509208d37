package lab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The folder scenarios measure what grows with the number of files
// rather than their size: listings of a huge folder asked for by many
// clients at once, and the length of an archive of a terabyte.

var listingScenario = &scenario{
	name:     "listing",
	caseHead: "format files × clients",
	about: func(s Settings) string {
		return "One folder of empty files listed by clients at once, all asking for the JSON listing (json: Accept: application/json; nginx's autoindex_format json) or all for the HTML page (html), one case per concurrency level. Wall s is until the last listing ends; complete is a 200 with a whole body; busy is a 503 with a Retry-After, the answer a server that bounds its memory may give (the clients share one address, which largo counts as one client: it holds at most a quarter of the listings' budget); other is anything else. MB each is the body of one listing. Run once per lab run: the folder takes a while to make and to list."
	},
	cases: func(cfg Config) []string {
		var cs []string
		for _, format := range []string{"json", "html"} {
			for _, c := range cfg.Concurrency {
				cs = append(cs, fmt.Sprintf("%s %d×%d", format, cfg.Files, c))
			}
		}
		return cs
	},
	once: true,
	columns: []column{colWall, colIdle, colPeak, colAbove, colCPU,
		{key: "complete", head: "complete", digits: 0},
		{key: "busy", head: "busy (503)", digits: 0},
		{key: "other", head: "other", digits: 0},
		{key: "each_mb", head: "MB each", digits: 1},
		{key: "body_mb", head: "MB sent", digits: 0}},
	run: runListing,
}

func runListing(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	format, files, clients, err := parseListingCase(cs)
	if err != nil {
		res.fail(err)
		return res
	}
	dir, err := r.data.folder(ctx, r.cfg, files)
	if err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return res
	}
	in, idle := r.begin(ctx, srv, dir, false, &res)
	if in == nil {
		return res
	}
	cl := r.client(clients)
	defer cl.close()
	// Generous, so that a slow server is measured: a second per ten
	// thousand files per client, and two minutes.
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute+time.Duration(files*clients/10_000)*time.Second)
	defer cancel()
	accept := "text/html"
	if format == "json" {
		accept = "application/json"
	}
	start := time.Now()
	results := parallel(clients, func(int) fetchResult {
		return cl.fetch(tctx, fetchReq{url: in.base, header: []string{"Accept", accept}})
	})
	res.set(keyWall, time.Since(start).Seconds())
	var complete, busy, other int
	var sent, each int64
	var failure error
	for _, fr := range results {
		sent += fr.bytes
		switch {
		case fr.check(200, -1) == nil && fr.bytes >= int64(files)*10:
			complete++
			each = fr.bytes
		case fr.status == http.StatusServiceUnavailable && fr.err == nil:
			busy++
		default:
			other++
			if failure == nil {
				failure = fr.check(200, -1)
				if failure == nil {
					failure = fmt.Errorf("a listing of %s for %d files", mb(fr.bytes), files)
				}
			}
		}
	}
	res.set("complete", float64(complete))
	res.set("busy", float64(busy))
	res.set("other", float64(other))
	res.set("body_mb", float64(sent)/1e6)
	if complete > 0 {
		res.set("each_mb", float64(each)/1e6)
	}
	switch {
	case other == clients && results[0].status == http.StatusNotFound:
		res.fail(fmt.Errorf("%w: no folder listings", errUnsupported))
	case other > 0:
		res.fail(fmt.Errorf("%d of %d answers neither a listing nor a 503: %v", other, clients, failure))
	}
	r.end(in, idle, &res, sent)
	return res
}

// parseListingCase reads "FORMAT FILES×CLIENTS", FORMAT json or html.
func parseListingCase(cs string) (format string, files, clients int, err error) {
	format, rest, _ := strings.Cut(cs, " ")
	f, c, ok := strings.Cut(rest, "×")
	if files, err = strconv.Atoi(f); err == nil && ok {
		clients, err = strconv.Atoi(c)
	}
	if err == nil && (!ok || files < 1 || clients < 1 || format != "json" && format != "html") {
		err = fmt.Errorf("listing case %q: want json|html FILES×CLIENTS", cs)
	}
	return format, files, clients, err
}

// sparseFolder is the folder of the archive-head scenario: sparseCount
// sparse files of sparseEach bytes, a terabyte in all.
const (
	sparseFolder = "sparse-1TiB"
	sparseCount  = 4
	sparseEach   = 256 << 30
)

var archiveHeadScenario = &scenario{
	name:     "archive-head",
	caseHead: "format",
	about: func(Settings) string {
		return fmt.Sprintf("HEAD of ?archive=FORMAT for a folder of %d sparse files of %s, a terabyte in all: how long the length takes and what it costs. Sizing an archive by producing it reads, or computes over, the terabyte; sizing it by arithmetic costs the listing. Read from file is the server's rchar growth.", sparseCount, sizeName(sparseEach))
	},
	cases: func(Config) []string { return []string{"zip", "tar"} },
	columns: []column{
		{key: "status", head: "answer", text: true},
		{key: "length_gib", head: "length GiB", digits: 1},
		{key: "wall_ms", head: "wall ms", digits: 1},
		colCPU,
		{key: keyRead, head: "read from file MB", digits: 3},
		colPeak,
	},
	run: runArchiveHead,
}

func runArchiveHead(ctx context.Context, r *runner, srv Server, format string) Result {
	var res Result
	if err := r.data.sparseFolder(); err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return res
	}
	one := r.single(ctx, srv, &res, false, time.Minute)
	if one == nil {
		return res
	}
	before := one.in.usage()
	start := time.Now()
	fr := one.cl.fetch(one.ctx, fetchReq{method: http.MethodHead, url: one.in.base + sparseFolder + "/?archive=" + format})
	wall := time.Since(start)
	after := one.in.usage()
	res.set("wall_ms", float64(wall.Microseconds())/1000)
	res.set(keyRead, float64(after.rchar-before.rchar)/1e6)
	if fr.status != 0 {
		res.note("status", fmt.Sprintf("%d %s", fr.status, http.StatusText(fr.status)))
	}
	switch {
	case fr.err != nil:
		res.fail(fr.err)
	case fr.status == http.StatusNotFound:
		res.fail(fmt.Errorf("%w: no folder archives", errUnsupported))
	case fr.status != http.StatusOK:
		res.fail(fmt.Errorf("answered %d %s", fr.status, http.StatusText(fr.status)))
	case fr.length < sparseCount*sparseEach:
		res.fail(errors.New("no length for the archive"))
	default:
		res.set("length_gib", float64(fr.length)/(1<<30))
	}
	one.end(r, &res, 0)
	return res
}

// folder returns a folder of n empty files, f0000000 and on, made once
// per data folder: a marker beside it records that it is complete. The
// warm-up file is put in it too, since servers serve the folder itself.
func (d *dataSet) folder(ctx context.Context, cfg Config, n int) (string, error) {
	dir := filepath.Join(d.dir, fmt.Sprintf("folder-%d", n))
	marker := filepath.Join(d.dir, fmt.Sprintf(".folder-%d.complete", n))
	if _, err := os.Stat(marker); err == nil {
		_, err := writeWarmUp(dir)
		return dir, err
	}
	fmt.Fprintf(cfg.Progress, "making %d empty files in %s\n", n, dir)
	start := time.Now()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	const workers = 4
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if i%4096 == w && ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%07d", i)), os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					errs[w] = err
					return
				}
				f.Close()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	fmt.Fprintf(cfg.Progress, "        made in %.1fs\n", time.Since(start).Seconds())
	if _, err := writeWarmUp(dir); err != nil {
		return "", err
	}
	return dir, os.WriteFile(marker, nil, 0o644)
}

// sparseFolder makes the folder of the archive-head scenario, if missing.
func (d *dataSet) sparseFolder() error {
	dir := filepath.Join(d.dir, sparseFolder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range sparseCount {
		if _, err := d.sparse(filepath.Join(sparseFolder, fmt.Sprintf("disk%d.img", i)), sparseEach); err != nil {
			return err
		}
	}
	return nil
}

package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// manyFiles is how many distinct files of warmUpSize the many scenario
// asks for, manyQuick with Quick: more than an open-file cache holds with
// largo's defaults (4,096 files, 16 MiB), so that a cache meets its worst
// case, a working set it cannot keep.
const (
	manyFiles = 10_000
	manyQuick = 2_000
)

var manyScenario = &scenario{
	name:     "many",
	caseHead: "files",
	about: func(Settings) string {
		return fmt.Sprintf("GETs of many distinct 4 KiB files over %d keep-alive connections for a fixed time, by wrk (2 threads, each walking its own half of the files in turn, so that a file comes back only after every other one) when it is installed, else by the lab's own Go client, each connection walking its own share: a working set larger than an open-file cache holds, each file asked for once per round. CPU µs/request is the server's CPU time per answer.", smallConns)
	},
	cases: func(cfg Config) []string {
		if cfg.Quick {
			return []string{strconv.Itoa(manyQuick)}
		}
		return []string{strconv.Itoa(manyFiles)}
	},
	columns: []column{{key: "rps", head: "requests/s", digits: 0}, {key: "cpu_us_per_req", head: "CPU µs/request", digits: 1}, colIdle, colAbove, {key: "client", head: "client", text: true}},
	run:     runMany,
}

func runMany(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	n, err := strconv.Atoi(cs)
	if err != nil || n <= 0 {
		res.fail(fmt.Errorf("many: case %q: want a number of files", cs))
		return res
	}
	d := smallDuration
	if r.cfg.Quick {
		d = smallQuick
	}
	dir, err := r.data.smallFiles(ctx, r.cfg, n)
	if err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return res
	}
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, manyName(i))
	}
	in, idle := r.begin(ctx, srv, dir, false, &res, paths...)
	if in == nil {
		return res
	}
	var done int64
	var wall time.Duration
	if wrk, lerr := exec.LookPath("wrk"); lerr == nil {
		res.note("client", "wrk")
		script := filepath.Join(dir, ".walk.lua")
		if err = os.WriteFile(script, manyScript(n), 0o644); err == nil {
			done, wall, err = runWrk(ctx, wrk, in.base, smallConns, d, script)
		}
		res.fail(err)
	} else {
		res.note("client", "go")
		urlOf := func(conn, i int) string {
			return in.base + manyName((conn+i*smallConns)%n)
		}
		done, wall, err = hammerEach(ctx, urlOf, warmUpSize, smallConns, d)
		res.fail(err)
	}
	u := r.end(in, idle, &res, done*warmUpSize)
	if done > 0 && wall > 0 {
		res.set("rps", float64(done)/wall.Seconds())
		res.set("cpu_us_per_req", (u.cpu-idle.cpu).Seconds()*1e6/float64(done))
	}
	return res
}

// manyName is the name of the i-th file of the many scenario.
func manyName(i int) string { return fmt.Sprintf("f%05d.bin", i) }

// manyScript is wrk's script of the many scenario over n files: each of
// wrk's threads walks its own share of them in turn (thread t asks for
// files t, t+threads, t+2*threads...), so that every file comes back
// only after all the others.
func manyScript(n int) []byte {
	return fmt.Appendf(nil, `-- The many scenario of largo bench: each thread walks its share of %[1]d files.
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  step = 2
  cursor = id
end
function request()
  local path = string.format("/f%%05d.bin", cursor)
  cursor = cursor + step
  if cursor >= %[1]d then cursor = cursor - %[1]d end
  return wrk.format("GET", path)
end
`, n)
}

// smallFiles returns a folder of n files of warmUpSize random bytes each
// (manyName), and the warm-up file, made once per data folder: a marker
// beside it records that it is complete.
func (d *dataSet) smallFiles(ctx context.Context, cfg Config, n int) (string, error) {
	dir := filepath.Join(d.dir, fmt.Sprintf("small-%d", n))
	marker := filepath.Join(d.dir, fmt.Sprintf(".small-%d.complete", n))
	if _, err := os.Stat(marker); err == nil {
		_, err := writeWarmUp(dir)
		return dir, err
	}
	fmt.Fprintf(cfg.Progress, "making %d files of %s in %s\n", n, sizeName(warmUpSize), dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var b bytes.Buffer
	for i := range n {
		if i%1024 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		b.Reset()
		writeRandom(&b, warmUpSize)
		if err := os.WriteFile(filepath.Join(dir, manyName(i)), b.Bytes(), 0o644); err != nil {
			return "", err
		}
	}
	if _, err := writeWarmUp(dir); err != nil {
		return "", err
	}
	return dir, os.WriteFile(marker, nil, 0o644)
}

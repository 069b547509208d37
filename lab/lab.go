// Package lab is largo's benchmark laboratory, the engine of `largo bench`:
// it reproduces the buffered-versus-streamed file serving experiments
// against largo, a deliberately naive buffered server, and any peer server
// given as a command template, and reports what each server cost.
//
// Every measurement is taken from outside the server: each scenario starts
// a fresh server process (resident memory never shrinks back, so a reused
// process would carry the last scenario's peak), sends it one warm-up
// request and reads its idle figures, samples the resident memory of its
// whole process tree every 50 ms, counts its descriptors and the bytes it
// read through /proc (package proc), and drives it with real concurrent
// HTTP clients: Go's, or curl processes. A memory guard kills a server whose memory passes a limit, so
// that a buffering server cannot take the machine down; the report says so
// instead of a figure.
//
// The package knows nothing of largo's server code: largo is started as a
// subprocess (`largo serve`), and so is the naive baseline (`largo bench
// naive-server`, served by NaiveHandler), so both are measured like every
// peer. Results are gathered per repetition and reported as medians with
// their range, as markdown tables, JSON and SVG charts.
//
// Choices worth knowing:
//   - Every server is a shell command template (Server), the built-in ones
//     included; largo and the baseline pick their own port and print their
//     URL, peers get a free port from the lab and are polled until they
//     accept connections. Servers run in their own process group, so that
//     a guard kill or the end of a scenario takes the whole tree.
//   - The Node.js peer's script is embedded in the binary (peers/), so
//     that `--peer node` works from an installed largo, not only from a
//     checkout; the nginx preset writes its own configuration.
//   - Every file a scenario serves is read through before the server
//     starts, sparse files too: the holes of a sparse file become zero
//     pages in the page cache on first read, and without this the first
//     server of a run pays for all the others.
//   - Idle means after one small request, the same for every server (a
//     GET of a 4 KiB file on a connection that then closes): a figure taken
//     before any request would flatter whichever server defers the most
//     work to its first client. The peak counts from the idle reading, not
//     from the start: VmHWM holds start-up's peak, so it is used only for a
//     server of one process whose VmHWM rose past its idle value (then it
//     is exact); otherwise the peak is the highest 50 ms sample, which can
//     miss a spike shorter than that.
//   - The slow and aborting clients are raw sockets whatever the
//     configured client: neither Go's client nor curl can be told to stop
//     reading, or to read 64 KiB every 100 ms, precisely.
//   - The distance scenario's long path is a proxy in the lab's own
//     process (shaper.go), not the kernel's netem, which a machine may
//     lack: its CPU is the lab's, never counted as the server's, and its
//     clients (largo get and put, curl, rclone) are processes of their
//     own, timed from start to exit.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"largo"
	"largo/proc"
)

// Config is what a run of the lab is told. The zero value of each field
// means its default, filled in by Run.
type Config struct {
	// Exe is the largo binary, run as `Exe serve ...` for largo and as
	// `Exe bench naive-server ...` for the baseline. Default: this process's
	// own executable.
	Exe string
	// Scenarios to run, by name (see Scenarios). Default: all.
	Scenarios []string
	// Size of the data file downloaded and uploaded. Default 1 GiB, 64 MiB
	// with Quick.
	Size int64
	// Quick runs a small version of every scenario: small files, short
	// holds, one repetition.
	Quick bool
	// Concurrency levels of the download scenario, and the numbers of
	// clients listing the folder at once in the listing scenario.
	// Default 1, 5 and 20.
	Concurrency []int
	// Files is the number of files in the listing scenario's folder.
	// Default 1,000,000, 5,000 with Quick.
	Files int
	// Hold is how long the stalled and dripping clients are held. Default
	// 20 s, 2 s with Quick.
	Hold time.Duration
	// RTTs are the round trips of the distance scenario's shaped path.
	// Default 50 and 150 ms.
	RTTs []time.Duration
	// StreamRate caps each connection over the shaped path, in bytes per
	// second each way. Default 16 MB/s, 64 MB/s with Quick.
	StreamRate int64
	// StreamWindow bounds each connection's bytes in flight over the
	// shaped path, each way, as a TCP window does: one stream then moves
	// at most a window per round trip. Default none.
	StreamWindow int64
	// Reps is the number of repetitions, interleaved across servers.
	// Default 3, 1 with Quick.
	Reps int
	// Client is the HTTP client: "go" (default) or "curl".
	Client string
	// Servers are the servers under test. Default: Largo and Naive.
	Servers []Server
	// Bucket is the S3 server of the bucket scenario when its Endpoint is
	// set: one already running, on which each case makes a bucket of its
	// own. Default: a versitygw the lab starts for each case.
	Bucket BucketServer
	// DataDir holds the data files, generated there if missing and kept.
	// Default: a temporary folder, removed at the end.
	DataDir string
	// MemoryGuard kills a server whose resident memory passes it. Default:
	// half the machine's memory.
	MemoryGuard int64
	// Progress receives one line as each step starts and ends. Nil
	// discards them.
	Progress io.Writer
}

// Defaults of the full run and of the quick one.
const (
	DefaultSize       = 1 << 30
	QuickSize         = 64 << 20
	DefaultHold       = 20 * time.Second
	QuickHold         = 2 * time.Second
	DefaultReps       = 3
	DefaultFiles      = 1_000_000
	QuickFiles        = 5_000
	maxFiles          = 10_000_000
	DefaultClient     = "go"
	DefaultStreamRate = 16_000_000
	QuickStreamRate   = 64_000_000
	minStreamRate     = 100_000
	minStreamWindow   = 16 << 10
	maxRTT            = 10 * time.Second
	compressFileSize  = 256 << 20 // largest file compressed, whatever Size
	quickCompressSize = 16 << 20  // the same, with Quick
)

// DefaultConcurrency returns the download scenario's default concurrency
// levels.
func DefaultConcurrency() []int { return []int{1, 5, 20} }

// DefaultRTTs returns the distance scenario's default round trips.
func DefaultRTTs() []time.Duration {
	return []time.Duration{50 * time.Millisecond, 150 * time.Millisecond}
}

// withDefaults returns cfg with every zero field filled in.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return cfg, fmt.Errorf("finding largo's own binary: %w", err)
		}
		cfg.Exe = exe
	}
	if len(cfg.Scenarios) == 0 {
		cfg.Scenarios = ScenarioNames()
	}
	for _, s := range cfg.Scenarios {
		if findScenario(s) == nil {
			return cfg, fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(ScenarioNames(), ", "))
		}
	}
	if cfg.Size == 0 {
		cfg.Size = DefaultSize
		if cfg.Quick {
			cfg.Size = QuickSize
		}
	}
	if cfg.Size < 4<<20 {
		return cfg, fmt.Errorf("size %s: the lab needs at least 4 MiB", largo.FormatSize(cfg.Size))
	}
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = DefaultConcurrency()
	}
	for _, c := range cfg.Concurrency {
		if c < 1 || c > 1000 {
			return cfg, fmt.Errorf("concurrency %d: want 1 to 1000", c)
		}
	}
	if cfg.Files == 0 {
		cfg.Files = DefaultFiles
		if cfg.Quick {
			cfg.Files = QuickFiles
		}
	}
	if cfg.Files < 1 || cfg.Files > maxFiles {
		return cfg, fmt.Errorf("files %d: want 1 to %d", cfg.Files, maxFiles)
	}
	if cfg.Hold == 0 {
		cfg.Hold = DefaultHold
		if cfg.Quick {
			cfg.Hold = QuickHold
		}
	}
	if len(cfg.RTTs) == 0 {
		cfg.RTTs = DefaultRTTs()
	}
	for _, d := range cfg.RTTs {
		if d <= 0 || d > maxRTT {
			return cfg, fmt.Errorf("round trip %s: want above 0 and at most %s", d, maxRTT)
		}
	}
	if cfg.StreamRate == 0 {
		cfg.StreamRate = DefaultStreamRate
		if cfg.Quick {
			cfg.StreamRate = QuickStreamRate
		}
	}
	if cfg.StreamRate < minStreamRate {
		return cfg, fmt.Errorf("stream rate %s: want at least %s", rateName(cfg.StreamRate), rateName(minStreamRate))
	}
	if cfg.StreamWindow < 0 || cfg.StreamWindow > 0 && cfg.StreamWindow < minStreamWindow {
		return cfg, fmt.Errorf("stream window %s: want at least %s", largo.FormatSize(cfg.StreamWindow), largo.FormatSize(minStreamWindow))
	}
	if cfg.Reps == 0 {
		cfg.Reps = DefaultReps
		if cfg.Quick {
			cfg.Reps = 1
		}
	}
	if cfg.Reps < 1 {
		return cfg, fmt.Errorf("reps %d: want at least 1", cfg.Reps)
	}
	if cfg.Client == "" {
		cfg.Client = DefaultClient
	}
	if cfg.Client != "go" && cfg.Client != "curl" {
		return cfg, fmt.Errorf("client %q: want go or curl", cfg.Client)
	}
	if len(cfg.Servers) == 0 {
		cfg.Servers = []Server{Largo(), Naive()}
	}
	seen := map[string]bool{}
	for _, s := range cfg.Servers {
		if seen[s.Name] {
			return cfg, fmt.Errorf("two servers named %q", s.Name)
		}
		seen[s.Name] = true
	}
	if cfg.MemoryGuard == 0 {
		total, err := proc.MemTotal()
		if err != nil {
			return cfg, fmt.Errorf("reading the machine's memory for the guard: %w", err)
		}
		cfg.MemoryGuard = total / 2
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	return cfg, nil
}

// Run runs the configured scenarios against every server and returns the
// report. It fails only when the lab itself cannot work (no data, no
// binary); a server that fails is a result, not an error. Cancelling ctx
// stops the servers and returns what was measured so far with ctx's error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, &ConfigError{err}
	}
	if cfg.Client == "curl" {
		if _, err := lookCurl(); err != nil {
			return nil, &ConfigError{err}
		}
	}
	data, err := prepareData(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer data.cleanup()

	rep := newReport(cfg, data.dir)
	r := &runner{cfg: cfg, data: data, progress: cfg.Progress}
	var steps int
	for _, name := range cfg.Scenarios {
		sc := findScenario(name)
		steps += len(sc.cases(cfg)) * len(cfg.Servers) * sc.reps(cfg)
	}
	step := 0
	for _, name := range cfg.Scenarios {
		sc := findScenario(name)
		for rp := range sc.reps(cfg) {
			for _, cs := range sc.cases(cfg) {
				for _, srv := range cfg.Servers {
					step++
					fmt.Fprintf(r.progress, "[%d/%d] %s %s · %s · rep %d/%d\n", step, steps, sc.name, cs, srv.Name, rp+1, sc.reps(cfg))
					start := time.Now()
					res := sc.run(ctx, r, srv, cs)
					res.Scenario, res.Server, res.Case, res.Rep = sc.name, srv.Name, cs, rp+1
					if ctx.Err() != nil {
						res.fail(errors.New("interrupted"))
					}
					if res.Outcome == "" {
						res.Outcome = OK
					}
					rep.add(res)
					fmt.Fprintf(r.progress, "        %s in %.1fs%s\n", res.Outcome, time.Since(start).Seconds(), sc.brief(res))
					if err := ctx.Err(); err != nil {
						rep.finish()
						return rep, err
					}
				}
			}
		}
	}
	rep.finish()
	return rep, nil
}

// ConfigError is a mistake in the Config given to Run, the user's to fix,
// as opposed to a failure of the lab's own work (writing its data files).
type ConfigError struct{ Err error }

// Error says what is wrong.
func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the mistake.
func (e *ConfigError) Unwrap() error { return e.Err }

// runner is what scenarios share during a run.
type runner struct {
	cfg      Config
	data     *dataSet
	progress io.Writer
}

// client returns the configured HTTP client, for count concurrent
// transfers.
func (r *runner) client(count int) fetcher {
	if r.cfg.Client == "curl" {
		return curlClient{}
	}
	return newGoClient(count)
}

// OK is the outcome of a run that went as planned.
const OK = "ok"

// errUnsupported marks a scenario the server does not support (uploads to
// a server that accepts none).
var errUnsupported = errors.New("not supported by this server")

// machine describes where the lab ran.
func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version()}
	m.Memory, _ = proc.MemTotal()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// ScenarioNames returns the names of every scenario, in the order they
// run.
func ScenarioNames() []string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return names
}

func findScenario(name string) *scenario {
	i := slices.IndexFunc(scenarios, func(s *scenario) bool { return s.name == name })
	if i < 0 {
		return nil
	}
	return scenarios[i]
}

// BucketServer is an S3 server already running, with the credentials and
// region to reach it by.
type BucketServer struct {
	Endpoint, AccessKey, SecretKey, Region string
}

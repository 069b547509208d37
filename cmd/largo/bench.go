package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"largo/internal/ready"
	"largo/lab"
)

// benchConfig is everything `largo bench` is told.
type benchConfig struct {
	scenarios   []string
	size        sizeValue
	quick       bool
	concurrency []int
	files       int
	hold        time.Duration
	rtts        []time.Duration
	streamRate  sizeValue
	window      sizeValue
	reps        int
	client      choiceValue
	peers       []string
	data        string
	json        string
	charts      string
	memoryGuard sizeValue
	bucketAt    string
}

func newBench(e *env) *cobra.Command {
	cfg := &benchConfig{client: choiceValue{value: lab.DefaultClient, choices: []string{"go", "curl"}}}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure largo beside a naive buffered server and peers",
		Long: `Run the buffered-versus-streamed experiments against largo, a deliberately
naive buffered server, and any peers, and print a markdown table per
scenario (progress goes to stderr).

Scenarios, each on a fresh server process: ` + strings.Join(lab.ScenarioNames(), ", ") + `.
Every figure is measured from outside the server, through /proc. Each
server answers one warm-up request (a GET of a 4 KiB file) before its idle
figures are read; its peak is the highest resident memory of its whole
process tree from then on, sampled every 50 ms (and VmHWM, exact, when a
single process passes its start-up peak). Also CPU time, descriptors, bytes
read. A server whose memory passes --memory-guard is killed and reported as
such.

Peers are presets (nginx, caddy, node, fileserver: Go's http.FileServer,
built with the go command, rclone) or NAME=COMMAND, a shell command with
the placeholders {dir} (the folder to serve), {port} (the port to listen on
at 127.0.0.1) and {tmp} (a scratch folder), for example:
  --peer nginx --peer caddy --peer node
  --peer 'stdlib=python3 -m http.server {port} --bind 127.0.0.1 --directory {dir}'`,
		Example: `  largo bench --quick
  largo bench --peer nginx --peer caddy --peer node --json bench.json --charts charts/
  largo bench --scenarios download,stalled --size 256MiB --reps 5
  largo bench --scenarios listing --files 1000000 --concurrency 1,40 --size 4MiB --peer nginx
  largo bench --scenarios distance --rtt 50ms,150ms --stream-rate 16MB --reps 1 --charts charts/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), e, cfg)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.scenarios, "scenarios", nil, "scenarios to run, comma-separated (default all: "+strings.Join(lab.ScenarioNames(), ",")+")")
	f.Var(&cfg.size, "size", "size of the file downloaded and uploaded (default 1GiB, 64MiB with --quick)")
	f.BoolVar(&cfg.quick, "quick", false, "a small run: 64 MiB files, 2 s holds, one repetition (well under a minute without peers)")
	f.IntSliceVar(&cfg.concurrency, "concurrency", lab.DefaultConcurrency(), "concurrent downloads of the download scenario, and clients listing at once in the listing scenario")
	f.IntVar(&cfg.files, "files", 0, "files in the listing scenario's folder (default 1000000, 5000 with --quick)")
	durationVar(f, &cfg.hold, "hold", 0, "how long the stalled and dripping clients are held (default 20s, 2s with --quick)")
	f.DurationSliceVar(&cfg.rtts, "rtt", lab.DefaultRTTs(), "round trips of the distance scenario's shaped path, comma-separated")
	f.Var(&cfg.streamRate, "stream-rate", "cap of each connection over the distance scenario's path, bytes per second each way (default 16MB, 64MB with --quick)")
	f.Var(&cfg.window, "stream-window", "window of each connection over the distance scenario's path: bytes in flight each way, so that one stream moves at most a window per round trip (default none)")
	f.IntVar(&cfg.reps, "reps", 0, "repetitions, interleaved across servers, reported as median (min-max) (default 3, 1 with --quick)")
	f.Var(&cfg.client, "client", "HTTP client: go or curl (curl processes)")
	f.StringArrayVar(&cfg.peers, "peer", nil, "a server to compare: nginx, caddy, node, fileserver, rclone, or 'NAME=COMMAND' with {dir} {port} {tmp}; repeat for several (default none)")
	f.StringVar(&cfg.data, "data", "", "folder for the data files, generated there if missing and kept (default a temporary folder, removed)")
	f.StringVar(&cfg.json, "json", "", "also write every result as JSON to this file (default none)")
	f.StringVar(&cfg.charts, "charts", "", "also write SVG charts of the download, caps and distance scenarios into this folder (default none)")
	f.StringVar(&cfg.bucketAt, "bucket-endpoint", "", "URL of an S3 server already running for the bucket scenario, with the credentials and region of AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION: each case makes a bucket of its own there (default a versitygw the lab starts)")
	f.Var(&cfg.memoryGuard, "memory-guard", "kill a server whose resident memory passes this (default half the machine's memory)")
	documentEnv(f)
	cmd.AddCommand(newNaiveServer(e), newBenchRender(e))
	return cmd
}

// newBenchRender makes the tables and charts of a saved report again.
func newBenchRender(e *env) *cobra.Command {
	var charts string
	cmd := &cobra.Command{
		Use:   "render FILE.json",
		Short: "Print the tables of a report saved with --json, and optionally write its charts",
		Long: `Read a report saved by largo bench --json and print its markdown tables,
without running anything; with --charts, write its SVG charts too.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return usageErr(fmt.Errorf("cannot read %s: %v", args[0], pathErrText(err)))
			}
			defer f.Close()
			rep, err := lab.ReadReport(f)
			if err != nil {
				return usageErr(fmt.Errorf("%s: %v", args[0], err))
			}
			if err := rep.WriteMarkdown(e.stdout); err != nil {
				return failed(err)
			}
			return writeCharts(e, rep, charts)
		},
	}
	cmd.Flags().StringVar(&charts, "charts", "", "also write the report's SVG charts into this folder (default none)")
	documentEnv(cmd.Flags())
	return cmd
}

// writeCharts writes a report's charts into dir, if dir is set, and names
// them on stderr.
func writeCharts(e *env, rep *lab.Report, dir string) error {
	if dir == "" {
		return nil
	}
	paths, err := rep.WriteCharts(dir)
	for _, p := range paths {
		fmt.Fprintln(e.stderr, "wrote", p)
	}
	if err != nil {
		return failed(fmt.Errorf("charts: %v", err))
	}
	return nil
}

// runBench runs the lab and writes its outputs.
func runBench(ctx context.Context, e *env, cfg *benchConfig) error {
	lc := lab.Config{
		Scenarios:    cfg.scenarios,
		Size:         int64(cfg.size),
		Quick:        cfg.quick,
		Concurrency:  cfg.concurrency,
		Files:        cfg.files,
		Hold:         cfg.hold,
		RTTs:         cfg.rtts,
		StreamRate:   int64(cfg.streamRate),
		StreamWindow: int64(cfg.window),
		Reps:         cfg.reps,
		Client:       cfg.client.value,
		DataDir:      cfg.data,
		MemoryGuard:  int64(cfg.memoryGuard),
		Progress:     e.stderr,
	}
	if cfg.bucketAt != "" {
		lc.Bucket = lab.BucketServer{Endpoint: cfg.bucketAt}
		lc.Bucket.AccessKey, _ = e.getenv("AWS_ACCESS_KEY_ID")
		lc.Bucket.SecretKey, _ = e.getenv("AWS_SECRET_ACCESS_KEY")
		lc.Bucket.Region, _ = e.getenv("AWS_REGION")
	}
	if cfg.hold < 0 || cfg.reps < 0 || cfg.files < 0 {
		return usageErr(errors.New("--hold, --reps and --files cannot be negative"))
	}
	if len(cfg.peers) > 0 {
		lc.Servers = []lab.Server{lab.Largo(), lab.Naive()}
		for _, p := range cfg.peers {
			srv, err := lab.ParsePeer(p)
			if err != nil {
				return usageErr(err)
			}
			lc.Servers = append(lc.Servers, srv)
		}
	}
	for _, out := range []string{cfg.json, cfg.charts} {
		if out == "" {
			continue
		}
		if _, err := os.Stat(filepath.Dir(filepath.Clean(out))); err != nil {
			return usageErr(fmt.Errorf("cannot write %s: %v", out, pathErrText(err)))
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.signals:
			fmt.Fprintln(e.stderr, "largo bench: interrupted; stopping the servers")
			cancel()
		case <-ctx.Done():
		}
	}()
	rep, runErr := lab.Run(ctx, lc)
	interrupted := &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	if rep == nil {
		var ce *lab.ConfigError
		switch {
		case errors.As(runErr, &ce):
			return usageErr(runErr)
		case errors.Is(runErr, context.Canceled):
			return interrupted
		}
		return failed(runErr)
	}
	if err := rep.WriteMarkdown(e.stdout); err != nil {
		return failed(err)
	}
	if cfg.json != "" {
		if err := writeFile(cfg.json, rep.WriteJSON); err != nil {
			return failed(err)
		}
	}
	if err := writeCharts(e, rep, cfg.charts); err != nil {
		return err
	}
	if runErr != nil {
		return interrupted
	}
	return nil
}

// writeFile writes a file through write, atomically.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".largo-bench-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// newNaiveServer is the hidden command that runs the lab's naive buffered
// baseline, so that the lab measures it from outside like any server.
func newNaiveServer(e *env) *cobra.Command {
	var listen string
	var idle time.Duration
	cmd := &cobra.Command{
		Use:    "naive-server DIR",
		Short:  "Serve DIR with the lab's deliberately naive buffered server (never for real use)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usageErr(fmt.Errorf("cannot listen on %s: %v", listen, netErrText(err)))
			}
			srv := &http.Server{
				Handler:           lab.NaiveHandler(args[0]),
				ReadHeaderTimeout: readHeaderTimeout,
				ErrorLog:          log.New(e.stderr, "naive: ", 0),
			}
			if idle > 0 {
				// The timeouts a net/http server is usually given.
				srv.ReadHeaderTimeout, srv.IdleTimeout = idle, idle
			}
			fmt.Fprintf(e.stdout, "naive: serving %s at http://%s/\n", args[0], ln.Addr())
			ready.Write(e.stdout, ready.Line{URL: fmt.Sprintf("http://%s/", ln.Addr()), Addr: ln.Addr().String()})
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			select {
			case err := <-served:
				return failed(err)
			case <-cmd.Context().Done():
			case <-e.signals:
			}
			return srv.Close()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "address to serve on, host:port")
	durationVar(cmd.Flags(), &idle, "idle-timeout", 0, "net/http's ReadHeaderTimeout and IdleTimeout (default 0: a header timeout of 10s, no idle timeout)")
	documentEnv(cmd.Flags())
	return cmd
}

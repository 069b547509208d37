package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"largo"
	"largo/encode"
	"largo/ingest"
	"largo/precompress"
	"largo/serve"
)

// precompressConfig is everything `largo precompress` is told.
type precompressConfig struct {
	where    serveConfig // the folder or bucket, as openStore reads it
	jobs     int
	level    choiceValue
	progress choiceValue
	sidecars choiceValue
}

// sidecarsChoice is the --sidecars flag of serve and precompress.
func sidecarsChoice() choiceValue {
	return choiceValue{value: "recorded", choices: []string{"recorded", "any"}}
}

func newPrecompress(e *env) *cobra.Command {
	cfg := &precompressConfig{
		level:    choiceValue{value: "max", choices: append([]string{"max"}, encode.Levels...)},
		progress: choiceValue{value: "auto", choices: []string{"auto", "bar", "lines", "none"}},
		sidecars: sidecarsChoice(),
	}
	cmd := &cobra.Command{
		Use:   "precompress DIR | --store s3://BUCKET/PREFIX",
		Short: "Write .zst, .br and .gz sidecars for the compressible files of a folder or bucket",
		Long: `Walk DIR, or with --store s3://BUCKET/PREFIX the objects of a bucket, and
write precompressed sidecars NAME.zst, NAME.br and NAME.gz beside each
compressible file NAME of 1 KiB or more (text, HTML, CSS, JavaScript, JSON,
NDJSON, CSV, XML, SVG, logs, WASM...), at each coding's best level, on as
many workers as there are cores. Each sidecar written is recorded in the
store's state area (.largo/sidecars on a folder) with its ETag and NAME's.
largo serve sends a recorded sidecar, with ranges (and sendfile, from a
folder), to clients that accept its coding while it and NAME are unchanged,
and hides it from listings.

A file under a sidecar's name that was not recorded (an uploaded data.csv.gz
beside data.csv, or sidecars made by hand or by an older largo) is a file of
its own: it is left as it is and reported. With --sidecars any, such files
are taken for sidecars, as largo serve --sidecars any takes them: written
over when older than NAME, and recorded.

A sidecar is kept only when it is at least 10% smaller than NAME. Files whose
sidecars are all fresh are skipped, so a second run only does what changed.
Sidecars are written the way largo serve writes uploads: into the store's
staging (on a folder, .largo/tmp; on a bucket, an upload that stays
invisible), then committed whole, so that no sidecar is ever seen in part
and nothing but finished sidecars appears beside the files. A file that
changes while it is compressed gets none. New sidecars get the permissions
of new files, not NAME's. Dot-files and dot-folders are left alone.

On a folder, the temporary files that an interrupted run or server left in
.largo/tmp are removed first: do not run it while largo serve --upload
writes to the same folder.

A bucket is reached as largo serve reaches it: credentials from
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, the endpoint
from --s3-endpoint, else AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, and the
region from --s3-region, else AWS_REGION or AWS_DEFAULT_REGION. Each sidecar
being written holds at most --s3-part-size x --s3-part-concurrency bytes in
memory.

--level max (the default) is each coding's best: zstd's best level, gzip 9,
brotli 11. Brotli 11 is slow, well under 1 MB/s per core: for files of
hundreds of megabytes, --level best (zstd better, gzip 9, brotli 6) takes
seconds instead of minutes for a few percent more bytes.

Exit code 0 when every sidecar was written or skipped, 1 when some failed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && cfg.where.store != "":
				return usageErr(errors.New("give a folder or --store ($LARGO_STORE), not both"))
			case len(args) == 0 && cfg.where.store == "":
				return usageErr(errors.New("give a folder, or a bucket with --store s3://BUCKET/PREFIX"))
			case len(args) == 1:
				cfg.where.dir = args[0]
			}
			return runPrecompress(cmd.Context(), e, cfg)
		},
	}
	f := cmd.Flags()
	addStoreFlags(f, &cfg.where, "where the files are: s3://BUCKET/PREFIX for a bucket, or a folder (instead of DIR)")
	addEngineFlags(f, &cfg.where.s3Engine)
	f.IntVar(&cfg.jobs, "jobs", 0, "sidecars compressed at once (default 0: one per core)")
	f.Var(&cfg.level, "level", "compression level: max, best, default or fast")
	f.Var(&cfg.progress, "progress", "progress display: auto (a bar on a terminal, lines otherwise), bar, lines or none")
	f.Var(&cfg.sidecars, "sidecars", "which files under a sidecar's name are sidecars: recorded (only those precompress recorded; others are left) or any (write over any older than NAME)")
	documentEnv(f)
	return cmd
}

// runPrecompress writes the sidecars of the store cfg names and prints a
// summary.
func runPrecompress(ctx context.Context, e *env, cfg *precompressConfig) error {
	if cfg.jobs < 0 {
		return usageErr(fmt.Errorf("--jobs must not be negative"))
	}
	if dir := cmp.Or(cfg.where.store, cfg.where.dir); !strings.HasPrefix(dir, "s3:") {
		if fi, err := os.Stat(dir); err != nil {
			return usageErr(fmt.Errorf("cannot precompress %s: %v", dir, pathErrText(err)))
		} else if !fi.IsDir() {
			return usageErr(fmt.Errorf("cannot precompress %s: not a directory", dir))
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.signals:
			cancel()
		case <-ctx.Done():
		}
	}()
	store, where, err := openStore(ctx, e, &cfg.where)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := prepareSidecars(ctx, e, store); err != nil {
		return err
	}
	// A bucket whose server lacks conditional writes takes one writer.
	lease, err := holdAlone(ctx, store, where)
	if err != nil {
		return err
	}
	if lease != nil {
		lctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); keepAlone(lctx, slog.New(slog.DiscardHandler), lease) }()
		defer func() { stop(); <-done }()
	}

	level := encode.Max
	if cfg.level.value != "max" {
		level, _ = encode.ParseLevel(cfg.level.value) // a choice already
	}
	// Sidecars are files too: each gets its record, with its digest, as
	// every write.
	files := recordsOf(store)
	migrateRecords(ctx, slog.New(slog.DiscardHandler), files)
	icfg := ingest.Config{Store: store, Files: files}
	pcfg := precompress.Config{
		Writes:      ingest.New(icfg),
		Jobs:        cfg.jobs,
		Level:       level,
		MediaType:   serve.MediaType,
		AnySidecars: cfg.sidecars.value == "any",
	}
	plan, err := precompress.Prepare(ctx, pcfg)
	if err != nil {
		return failed(fmt.Errorf("cannot walk %s: %v", where, pathErrText(err)))
	}
	mode := cfg.progress.value
	if mode == "auto" {
		mode = "lines"
		if isTerminal(e.stderr) {
			mode = "bar"
		}
	}
	fmt.Fprintf(e.stdout, "largo: %d files to compress (%s), %d up to date\n", len(plan.Files), largo.FormatSize(plan.Bytes/int64(len(encode.Codings))), len(plan.Fresh))
	var bar *progressbar.ProgressBar
	switch mode {
	case "bar":
		bar = progressbar.NewOptions64(plan.Bytes,
			progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription("compressing"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionFullWidth())
		pcfg.Read = func(n int64) { bar.Add64(n) }
	case "lines":
		pcfg.Progress = func(ev precompress.Event) { printEvent(e.stderr, ev) }
	}
	sum, err := precompress.Run(ctx, pcfg, plan)
	if bar != nil {
		bar.Finish()
	}
	printSummary(e.stdout, sum)
	if err != nil {
		return failed(fmt.Errorf("stopped: %v", err))
	}
	if sum.Failed > 0 {
		return failed(fmt.Errorf("%d sidecars could not be written", sum.Failed))
	}
	return nil
}

// prepareSidecars readies the store for the sidecars' writes, as serve
// does: the store's own checks (a bucket's credentials and conditions),
// and the removal of what writes of processes that are gone left (a
// running server's writes are safe).
func prepareSidecars(ctx context.Context, e *env, st largo.Store) error {
	p, ok := st.(writePreparer)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	n, err := p.PrepareWrites(ctx)
	if err != nil {
		return prepareErr("cannot write sidecars", err)
	}
	if n > 0 {
		fmt.Fprintf(e.stdout, "largo: removed %d temporary files left by an interrupted run\n", n)
	}
	return nil
}

// printEvent writes one plain progress line.
func printEvent(w io.Writer, ev precompress.Event) {
	switch {
	case ev.Fresh:
		fmt.Fprintf(w, "fresh    %s\n", ev.Name)
	case ev.Foreign:
		fmt.Fprintf(w, "left     %s%s  a file of its own, not a sidecar largo wrote\n", ev.Name, ev.Coding.Ext())
	case ev.Err != nil:
		fmt.Fprintf(w, "FAILED   %s%s: %v\n", ev.Name, ev.Coding.Ext(), pathErrText(ev.Err))
	case ev.Kept:
		fmt.Fprintf(w, "wrote    %s%s  %s -> %s (%s)\n", ev.Name, ev.Coding.Ext(), largo.FormatSize(ev.Size), largo.FormatSize(ev.Encoded), saving(ev.Size, ev.Encoded))
	default:
		fmt.Fprintf(w, "dropped  %s%s  %s -> %s (saves under 10%%)\n", ev.Name, ev.Coding.Ext(), largo.FormatSize(ev.Size), largo.FormatSize(ev.Encoded))
	}
}

// printSummary writes the totals of a run.
func printSummary(w io.Writer, s precompress.Summary) {
	fmt.Fprintf(w, "largo: %d compressible files: %d compressed, %d up to date; %d sidecars written, %d dropped (saved under 10%%), %d failed\n",
		s.Files, s.Compressed, s.Fresh, s.Sidecars, s.Dropped, s.Failed)
	if s.Foreign > 0 {
		fmt.Fprintf(w, "largo: %d files under a sidecar's name left as they are: not sidecars largo wrote (--sidecars any takes them for sidecars)\n", s.Foreign)
	}
	fmt.Fprintf(w, "largo: %s before, %s after with the smallest sidecar of each (%s), in %s\n",
		largo.FormatSize(s.Before), largo.FormatSize(s.After), saving(s.Before, s.After), s.Elapsed.Round(time.Millisecond))
	for _, c := range encode.Codings {
		if n, ok := s.Bytes[c]; ok {
			fmt.Fprintf(w, "largo: %-4s sidecars: %s\n", c.Ext(), largo.FormatSize(n))
		}
	}
}

// saving is the fraction of before that after saves, as text.
func saving(before, after int64) string {
	if before == 0 {
		return "0% smaller"
	}
	return fmt.Sprintf("%.0f%% smaller", 100*float64(before-after)/float64(before))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

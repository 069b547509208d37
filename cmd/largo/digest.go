package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"largo"
	"largo/client"
	"largo/digests"
	"largo/record"
)

// perSecondValue is a flag holding a rate in bytes per second: a size
// (100MB, 1GiB), with or without "/s".
type perSecondValue struct{ sizeValue }

func (v *perSecondValue) Set(s string) error {
	return v.sizeValue.Set(strings.TrimSuffix(strings.TrimSpace(s), "/s"))
}

func (v *perSecondValue) String() string {
	if v.sizeValue == 0 {
		return "0"
	}
	return v.sizeValue.String() + "/s"
}

func (v *perSecondValue) Type() string { return "rate" }

// digestScanPeriod is how often the server's background pass looks for
// files without a digest of their current version.
const digestScanPeriod = time.Hour

// defaultDigestRate is how fast the server's background pass reads the
// files it hashes unless --digest-rate says otherwise: a modest share of
// a disk's bandwidth (a 2 GiB file in under two minutes), beside the
// transfers it serves.
const defaultDigestRate = 20_000_000

// addDigestFlags registers the flags of largo serve about digests.
func addDigestFlags(f *pflag.FlagSet, rate *perSecondValue) {
	rate.sizeValue = defaultDigestRate
	f.Var(rate, "digest-rate", "hash, in the background and at most at this rate, the files that have no recorded SHA-256 and CRC-32 of their current version (copied onto the disk, put into the bucket directly, or uploaded before the CRC-32 was kept), at start-up and every hour, so that they download verified and zips of them resume (0: never; largo digest does it on demand)")
}

// newDigests returns the keeper of the store's digests, which the
// handler answers from and the write pipeline records through; nil for a
// store without a state area, which keeps none.
func newDigests(logger *slog.Logger, st largo.Store, files *record.Files) *digests.Keeper {
	if files == nil {
		return nil
	}
	return digests.New(files, digests.Options{Store: st, Logger: logger})
}

// digestConfig is everything `largo digest` is told.
type digestConfig struct {
	where serveConfig // the folder or bucket, as openStore reads it
	rate  perSecondValue
	force bool
	quiet bool
}

func newDigest(e *env) *cobra.Command {
	cfg := &digestConfig{}
	cmd := &cobra.Command{
		Use:   "digest PATH... | --store DIR|s3://BUCKET/PREFIX [NAME...]",
		Short: "Record the SHA-256 and CRC-32 of files that arrived without largo, for Repr-Digest, SHA256SUMS and zips that resume",
		Long: `Hash files that reached a served folder or bucket another way than through
largo (copied onto the disk, put into the bucket directly, restored from a
backup) and record each one's SHA-256 in the store's state area
(.largo/digests on a folder) with the version (ETag) it belongs to. largo
serve then answers it as Repr-Digest on GET and HEAD, lists it in the
folder's SHA256SUMS and in the JSON listing, without reading the file
again. Files written through largo (PUT, forms, tus, resumable uploads,
WebDAV, precompress) are recorded as they land and need no hashing.

Each PATH is a file or a folder on this machine, inside a folder that
largo serves: the served folder is the nearest one above PATH (or PATH
itself) that holds largo's .largo state folder, or, when none does, the
folder PATH names. With --store, each NAME is a file or folder inside that
folder or bucket (none: all of it).

A file whose current version has a digest recorded is not read again
(--force reads it all the same). A file that changes while it is read gets
none. A digest belongs to a version: once the file changes, the server no
longer serves it, and the file needs hashing again. --rate caps the bytes
read per second, all files together, so that a large store can be hashed
beside a busy server.

Each file's digest is printed on standard output as sha256sum prints it
(HEX, two spaces, the name inside the store); failures and the summary go
to standard error. Exit code 0 when every file has a digest, 1 when some
could not be hashed or recorded.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.where.store == "" && len(args) == 0 {
				return usageErr(errors.New("give the files or folders to hash, or a store with --store"))
			}
			return runDigest(cmd.Context(), e, cfg, args)
		},
	}
	f := cmd.Flags()
	addStoreFlags(f, &cfg.where, "the folder or bucket (s3://BUCKET/PREFIX) the files are in; arguments are then names inside it")
	f.Var(&cfg.rate, "rate", "most bytes read per second, such as 100MB/s (default 0: no cap)")
	f.BoolVar(&cfg.force, "force", false, "hash files whose current version has a digest recorded already")
	f.BoolVarP(&cfg.quiet, "quiet", "q", false, "print nothing but failures")
	documentEnv(f)
	return cmd
}

// digestJob is what to hash in one store.
type digestJob struct {
	where serveConfig
	names []string
}

// runDigest hashes what cfg and args name and prints the digests.
func runDigest(ctx context.Context, e *env, cfg *digestConfig, args []string) error {
	jobs, err := digestJobs(cfg, args)
	if err != nil {
		return err
	}
	ctx, stop := untilSignal(ctx, e)
	defer stop()
	start := time.Now()
	var total digests.Summary
	for _, j := range jobs {
		s, err := digestStore(ctx, e, cfg, j)
		total.Hashed += s.Hashed
		total.Fresh += s.Fresh
		total.Failed += s.Failed
		total.Bytes += s.Bytes
		if err != nil {
			return err
		}
	}
	if !cfg.quiet {
		fmt.Fprintf(e.stderr, "largo: %d files hashed (%s read), %d already recorded, %d failed, in %s\n",
			total.Hashed, largo.FormatSize(total.Bytes), total.Fresh, total.Failed, time.Since(start).Round(time.Millisecond))
	}
	if total.Failed > 0 {
		return failed(fmt.Errorf("%d files have no digest", total.Failed))
	}
	return nil
}

// digestJobs groups the names to hash by store: the --store's, or for
// each local path the served folder it is in.
func digestJobs(cfg *digestConfig, args []string) ([]digestJob, error) {
	if cfg.where.store != "" {
		j := digestJob{where: cfg.where}
		for _, a := range args {
			name, err := largo.ParseName("/" + strings.TrimPrefix(a, "/"))
			if err != nil {
				return nil, usageErr(fmt.Errorf("%s: not a name inside the store: %v", a, err))
			}
			j.names = append(j.names, name)
		}
		if len(j.names) == 0 {
			j.names = []string{""}
		}
		return []digestJob{j}, nil
	}
	var jobs []digestJob
	byRoot := map[string]int{}
	for _, a := range args {
		root, name, err := servedFolder(a)
		if err != nil {
			return nil, usageErr(err)
		}
		i, ok := byRoot[root]
		if !ok {
			i = len(jobs)
			byRoot[root] = i
			w := cfg.where
			w.dir = root
			jobs = append(jobs, digestJob{where: w})
		}
		jobs[i].names = append(jobs[i].names, name)
	}
	return jobs, nil
}

// servedFolder returns the folder served around the local path p (the
// nearest one at or above it that holds largo's state folder, else p when
// it is a folder), and p's name inside it.
func servedFolder(p string) (root, name string, err error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", "", fmt.Errorf("cannot hash %s: %v", p, pathErrText(err))
	}
	start := abs
	if !fi.IsDir() {
		start = filepath.Dir(abs)
	}
	root, _ = stateRoot(start)
	if root == "" {
		if !fi.IsDir() {
			return "", "", fmt.Errorf("cannot hash %s: no folder above it holds largo's %s state folder: give the served folder with --store DIR", p, largo.StateDir)
		}
		root = abs
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return "", "", err
	}
	if rel == "." {
		return root, "", nil
	}
	name, err = largo.ParseName("/" + filepath.ToSlash(rel))
	if err != nil || largo.Hidden(name) {
		return "", "", fmt.Errorf("cannot hash %s: not a name largo serves", p)
	}
	return root, name, nil
}

// stateRoot returns the nearest folder at or above the folder dir (an
// absolute path) that holds largo's state folder: the folder a server
// served, or a command kept records in.
func stateRoot(dir string) (string, bool) {
	for ; ; dir = filepath.Dir(dir) {
		if st, err := os.Stat(filepath.Join(dir, largo.StateDir)); err == nil && st.IsDir() {
			return dir, true
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
}

// digestStore hashes the names of one job.
func digestStore(ctx context.Context, e *env, cfg *digestConfig, j digestJob) (digests.Summary, error) {
	var total digests.Summary
	store, where, err := openStore(ctx, e, &j.where)
	if err != nil {
		return total, err
	}
	defer store.Close()
	files := recordsOf(store)
	if files == nil {
		return total, usageErr(fmt.Errorf("%s keeps no state to record digests in", where))
	}
	migrateRecords(ctx, slog.New(slog.DiscardHandler), files)
	k := digests.New(files, digests.Options{Store: store})
	prog := newDigestProgress(ctx, progressFor(e.stderr, cfg.quiet), store, j.names)
	defer prog.end()
	opt := digests.HashOptions{Rate: int64(cfg.rate.sizeValue), Force: cfg.force, Read: prog.read, Event: func(ev digests.Event) {
		prog.clear()
		printDigest(e.stdout, e.stderr, cfg.quiet, ev)
		prog.done(ev)
	}}
	for _, name := range j.names {
		s, err := k.Hash(ctx, name, opt)
		total.Hashed += s.Hashed
		total.Fresh += s.Fresh
		total.Failed += s.Failed
		total.Bytes += s.Bytes
		switch {
		case ctx.Err() != nil:
			return total, failed(errors.New("stopped"))
		case err != nil:
			return total, failed(fmt.Errorf("cannot hash %s in %s: %v", cmp.Or(name, "the whole store"), where, pathErrText(err)))
		}
	}
	return total, nil
}

// digestProgress shows largo digest's progress on standard error: the
// files and bytes done of those below the names asked for, with a bar and
// the time left on a terminal, a line every few seconds elsewhere,
// nothing with -q. The total is counted by a walk of the names first,
// which reads no file; a file already recorded counts as done at once.
type digestProgress struct {
	p           client.Progress // nil: none shown
	files, seen int
	inFile      int64 // bytes of the file being hashed read so far
}

// newDigestProgress counts what names hold in store and begins showing
// the progress of hashing it through a Progress of mk (nil: none).
func newDigestProgress(ctx context.Context, mk func() client.Progress, store largo.Store, names []string) *digestProgress {
	dp := &digestProgress{}
	if mk == nil {
		return dp
	}
	var bytes int64
	for _, name := range names {
		largo.WalkDir(ctx, store, name, func(_ string, in largo.Info, err error) error {
			if err == nil && !in.IsDir && !in.Link {
				dp.files++
				bytes += in.Size
			}
			return nil
		})
	}
	dp.p = mk()
	dp.p.Begin(dp.describe(), bytes, 0)
	return dp
}

// describe is what the progress is called: files done of all.
func (dp *digestProgress) describe() string {
	return fmt.Sprintf("hashing: %d of %d files", dp.seen, dp.files)
}

// read counts n bytes read of the file being hashed.
func (dp *digestProgress) read(n int64) {
	if dp.p != nil {
		dp.inFile += n
		dp.p.Add(n)
	}
}

// done counts the file ev tells of as done, with what of it was not read.
func (dp *digestProgress) done(ev digests.Event) {
	if dp.p == nil {
		return
	}
	if rest := ev.Size - dp.inFile; rest > 0 {
		dp.p.Add(rest)
	}
	dp.inFile = 0
	dp.seen++
	if r, ok := dp.p.(interface{ Rename(string) }); ok {
		r.Rename(dp.describe())
	}
}

// clear erases a bar before a line is printed over it.
func (dp *digestProgress) clear() {
	if c, ok := dp.p.(interface{ Clear() }); ok {
		c.Clear()
	}
}

func (dp *digestProgress) end() {
	if dp.p != nil {
		dp.p.End()
	}
}

// printDigest tells of one file: its digest as sha256sum prints it, or
// why it has none.
func printDigest(out, errOut io.Writer, quiet bool, ev digests.Event) {
	if ev.Err != nil {
		fmt.Fprintf(errOut, "FAILED %s: %v\n", ev.Name, pathErrText(ev.Err))
		return
	}
	if !quiet {
		fmt.Fprintf(out, "%s  %s\n", hex.EncodeToString(ev.SHA256), ev.Name)
	}
}

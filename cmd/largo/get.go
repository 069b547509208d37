package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"largo/client"
)

// getConfig is everything `largo get` is told.
type getConfig struct {
	transferConfig
	output   string
	segments int
}

func newGet(e *env) *cobra.Command {
	cfg := &getConfig{}
	cmd := &cobra.Command{
		Use:   "get URL",
		Short: "Download a file (or, with -r, a folder) with resume and verification",
		Long: `Download URL into a file named after it in the current folder, or into
-o FILE, or into -o DIR/.

The bytes go into FILE.part, which becomes FILE only when complete and
verified; FILE.part.json beside it remembers the remote version. Running the
same command again resumes with Range and If-Range: if the remote file
changed, or the server ignores ranges, the download starts again from zero
and says so. Content-Length is checked, and so is Repr-Digest (sha-256 or
sha-512) when the server sends one. Network errors are retried with
exponential backoff, resuming each time. An existing FILE with the remote
size and modification time is left as it is.

-j N (--parallel) is how many connections one file uses, as in largo put:
a file of 2 MiB or more, from a server that takes ranges, comes in N
ranged requests at once (default 4; -j 1 is one stream) into a
preallocated part file, each segment resumable. A download resumed with
more connections than it began with cuts what is left into as many
segments (saying so when too little is left for them all).

-r downloads a folder from largo's JSON listing into a local folder (-o
DIR, default the folder's name), skipping files already in place.

Ctrl-C stops with the part files kept and prints the command that resumes.
` + credentialsHelp + exitCodesHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd.Context(), e, cfg, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.output, "output", "o", "", "file to write, or folder to write into (a name ending in /) (default: the URL's last name, in the current folder)")
	f.IntVarP(&cfg.segments, "parallel", "j", defaultParallel, "connections at once for one file: ranged requests of its segments (a file of 2 MiB or more, from a server that takes ranges); 1 sends one stream")
	f.IntVar(&cfg.segments, "segments", defaultParallel, "the former name of --parallel")
	f.MarkHidden("segments")
	noEnv(f, "segments")
	cfg.flags(f)
	documentEnv(f)
	return cmd
}

func runGet(ctx context.Context, e *env, cfg *getConfig, rawURL string) error {
	if cfg.segments < 1 || cfg.segments > 64 {
		return usageErr(errors.New("--parallel (-j) must be between 1 and 64"))
	}
	c, rawURL, err := cfg.client(e, rawURL)
	if err != nil {
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return usageErr(err)
	}
	c.Segments = cfg.segments
	ctx, stop := untilSignal(ctx, e)
	defer stop()
	start := time.Now()
	if cfg.recursive {
		dir := cfg.output
		if dir == "" {
			if dir = path.Base(strings.TrimSuffix(u.Path, "/")); dir == "/" || dir == "." || dir == "" {
				dir = strings.ReplaceAll(u.Host, ":", "_")
			}
		}
		tr, err := c.GetTree(ctx, rawURL, dir)
		if cfg.askLinkPassword(e, c, err) {
			tr, err = c.GetTree(ctx, rawURL, dir)
		}
		if !cfg.quiet && !errors.Is(err, client.ErrResumable) {
			fmt.Fprintln(e.stderr, treeSummary("downloaded into "+dir+":", tr, time.Since(start)))
		}
		return cfg.transferErr(err, resumeCommand("get", cfg.transferConfig, jobsArg(cfg.segments), rawURL, "-o", dir))
	}
	target, err := client.Target(rawURL, cfg.output)
	if err != nil {
		return usageErr(err)
	}
	res, err := c.Get(ctx, rawURL, target)
	if cfg.askLinkPassword(e, c, err) {
		res, err = c.Get(ctx, rawURL, target)
	}
	if err == nil && !cfg.quiet {
		fmt.Fprintln(e.stderr, summary("saved", res, time.Since(start)))
	}
	return cfg.transferErr(err, resumeCommand("get", cfg.transferConfig, jobsArg(cfg.segments), rawURL, "-o", target))
}

// jobsArg is the -j a resume command repeats: n when it is not the
// default, else 0 (none).
func jobsArg(n int) int {
	if n == defaultParallel {
		return 0
	}
	return n
}

// resumeCommand is the command line that runs a transfer again, with its
// credential given as it was (see credential), and -j jobs unless 0.
func resumeCommand(verb string, t transferConfig, jobs int, args ...string) string {
	parts := []string{"largo", verb}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	if jobs > 0 {
		parts = append(parts, "-j", fmt.Sprint(jobs))
	}
	if t.recursive {
		parts = append(parts, "-r")
	}
	return t.cred.command(strings.Join(parts, " "))
}

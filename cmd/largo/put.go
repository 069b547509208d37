package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"largo/client"
)

// putConfig is everything `largo put` is told.
type putConfig struct {
	transferConfig
	plain    bool
	cancel   bool
	protocol choiceValue
	parallel int
	checksum bool
}

// defaultParallel is how many connections one file uses at once, in get
// (ranged requests) and put (pieces) alike.
const defaultParallel = 4

func newPut(e *env) *cobra.Command {
	cfg := &putConfig{protocol: choiceValue{value: "tus", choices: []string{"tus", "ietf"}}}
	cmd := &cobra.Command{
		Use:   "put FILE URL",
		Short: "Upload a file (or, with -r, a folder) resumably",
		Long: `Upload FILE to URL with the tus 1.0 resumable upload protocol.

URL is either a tus endpoint (the file is created there, its name sent as
metadata), or a folder (ending in /) or file name on a largo server, whose
tus endpoint is ` + client.UploadsPath + ` on the same host; to a largo share link
(a drop box), the IETF protocol below, at the link's own URL. The upload sends the
"filename" and "folder" metadata, checks each chunk with the tus checksum
extension where the server offers it, and sends the file's sha-256, computed
while the bytes go, as Repr-Digest with its last 4 MiB: largo refuses to
store an upload that does not match.

A file of 64 MiB or more, to a server that offers tus concatenation (largo
does), goes in parallel: cut into pieces of 16 MiB or more, -j at once over
as many connections (default 4; -j 1 sends one stream), the lowest pieces
first, each a partial upload that says where it belongs in the file; then
one final request joins them, with the file's sha-256, which the server
checks. On a largo server the pieces are written where they belong and the
file hashed as it fills in, so that the join takes a moment at any size.

The upload URL is remembered in the user's cache folder, keyed by the file's
path, size and modification time and by URL: running the same command again
resumes the upload (each piece of a parallel one from where it stopped); a
changed file starts a new one. --cancel terminates the remembered upload on
the server instead.

--protocol ietf speaks the IETF resumable-upload draft (interop version 9)
instead of tus: the file is PUT to URL itself, which a largo server turns
into a resumable upload, all but its last 4 MiB in that request; the rest,
with the sha-256, goes to the upload URL the server gave (in a 104 interim
response), where an interrupted upload resumes. It is remembered and
cancelled like a tus upload.

--plain sends one PUT to URL instead (for servers without tus), with
Content-Length and a Repr-Digest (sha-256, computed before the upload); it
cannot resume, only start again. -r uploads the files below the folder FILE,
keeping their relative paths (names starting with a dot are skipped). It
skips, and counts as already in place, each file the server already holds
whole, asked with a HEAD at its place: the same size and, where the server
keeps one (largo does), the same sha-256 (Repr-Digest); a server that keeps
none is believed on the size when its copy is not older than the file.
--checksum wants the digest: a file whose copy has none is sent again. An
interrupted -r run, run again, sends only what is missing.

Ctrl-C stops with the upload's state kept and prints the command that
resumes.
` + credentialsHelp + exitCodesHelp,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPut(cmd.Context(), e, cfg, args[0], args[1])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&cfg.plain, "plain", false, "send one PUT instead of a resumable tus upload")
	f.Var(&cfg.protocol, "protocol", "resumable upload protocol: tus, or ietf (the IETF draft, at the file's own URL)")
	f.BoolVar(&cfg.cancel, "cancel", false, "terminate the remembered upload of FILE to URL on the server, and forget it")
	f.IntVarP(&cfg.parallel, "parallel", "j", defaultParallel, "connections at once for one file: pieces sent at once (a file of 64 MiB or more, to a server with tus concatenation); 1 sends one stream")
	f.BoolVar(&cfg.checksum, "checksum", false, "with -r: skip a file the server holds only when the server's sha-256 of it matches (default: the size, and the digest where the server keeps one)")
	cfg.flags(f)
	documentEnv(f)
	return cmd
}

func runPut(ctx context.Context, e *env, cfg *putConfig, file, rawURL string) error {
	fi, err := os.Stat(file)
	if err != nil {
		return usageErr(fmt.Errorf("cannot upload %s: %v", file, pathErrText(err)))
	}
	if fi.IsDir() != cfg.recursive {
		if fi.IsDir() {
			return usageErr(fmt.Errorf("%s is a folder: use -r to upload a folder tree", file))
		}
		return usageErr(fmt.Errorf("-r needs a folder; %s is a file", file))
	}
	if cfg.cancel && (cfg.plain || cfg.recursive) {
		return usageErr(errors.New("--cancel goes with a single resumable upload, not --plain or -r"))
	}
	ietf := cfg.protocol.value == "ietf"
	if ietf && cfg.plain {
		return usageErr(errors.New("--plain sends one PUT: it takes no --protocol"))
	}
	if cfg.checksum && !cfg.recursive {
		return usageErr(errors.New("--checksum goes with -r: it decides which files of a folder are already in place"))
	}
	if cfg.parallel < 1 || cfg.parallel > 64 {
		return usageErr(errors.New("--parallel (-j) must be between 1 and 64"))
	}
	c, rawURL, err := cfg.client(e, rawURL)
	if err != nil {
		return err
	}
	c.Parallel = cfg.parallel
	c.Checksum = cfg.checksum
	ctx, stop := untilSignal(ctx, e)
	defer stop()
	jobs := 0
	if !cfg.plain && !ietf {
		jobs = jobsArg(cfg.parallel)
	}
	resume := resumeCommand("put", cfg.transferConfig, jobs, file, rawURL)
	if cfg.plain {
		resume += " --plain"
	}
	if cfg.checksum {
		resume += " --checksum"
	}
	var dest *client.Destination
	start := time.Now()
	if ietf {
		resume += " --protocol ietf"
		dest, err = c.DiscoverIETF(rawURL)
	} else {
		dest, err = c.Discover(ctx, rawURL, cfg.plain)
	}
	if err != nil {
		return cfg.transferErr(err, resume)
	}
	if cfg.cancel {
		found, err := c.Cancel(ctx, file, dest, "")
		if err == nil && !cfg.quiet {
			if found {
				fmt.Fprintf(e.stderr, "%s: upload cancelled\n", file)
			} else {
				fmt.Fprintf(e.stderr, "%s: no upload to %s to cancel\n", file, rawURL)
			}
		}
		return cfg.transferErr(err, resume)
	}
	if cfg.recursive {
		tr, err := c.PutTree(ctx, file, dest)
		if cfg.askLinkPassword(e, c, err) {
			tr, err = c.PutTree(ctx, file, dest)
		}
		if !cfg.quiet && !errors.Is(err, client.ErrResumable) {
			fmt.Fprintln(e.stderr, treeSummary("uploaded", tr, time.Since(start)))
		}
		return cfg.transferErr(err, resume)
	}
	res, err := c.Put(ctx, file, dest, "")
	if cfg.askLinkPassword(e, c, err) {
		res, err = c.Put(ctx, file, dest, "")
	}
	if err == nil && !cfg.quiet {
		fmt.Fprintln(e.stderr, summary("uploaded", res, time.Since(start)))
	}
	return cfg.transferErr(err, resume)
}

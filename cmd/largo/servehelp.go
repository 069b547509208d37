package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// serve has some sixty flags and a long description, which its
// reference (go generate ./cmd/largo), its man page and --help-all give whole.
// --help gives the few a first server needs, grouped, and says where the
// rest are.

// commonServeFlags are the flags largo serve --help shows, by group,
// each with a line of its own (the flag's usage is its reference).
var commonServeFlags = []struct {
	group string
	flags [][2]string // name, what it is for
}{
	{"Where it listens", [][2]string{
		{"listen", "address to serve on, host:port (port 0 picks a free one)"},
		{"tls-cert", "TLS certificate file, PEM: serve HTTPS and HTTP/2 (with --tls-key)"},
		{"tls-key", "TLS private key file, PEM"},
		{"public-url", "the URL clients reach it at behind a proxy (for largo share)"},
		{"admin-listen", "another address for metrics and pprof"},
	}},
	{"What it serves", [][2]string{
		{"store", "a folder, or s3://BUCKET/PREFIX (default: DIR)"},
		{"webdav", "speak WebDAV too, to mount it as a drive"},
	}},
	{"Who may write", [][2]string{
		{"upload", "take writes (PUT, forms, tus, IETF), each with the token"},
		{"token-file", "read the token from this file (implies --upload)"},
		{"access", "access file: users, passwords, tokens, rules (docs/access.md)"},
	}},
	{"Limits", [][2]string{
		{"max-upload", "largest file a write may store, such as 10GiB"},
		{"reserve", "free space writes must leave on the disk"},
		{"rate-per-address", "bandwidth of one client address, such as 10MB (per second)"},
		{"max-conns", "most connections at once (503 beyond)"},
	}},
	{"Behind a proxy", [][2]string{
		{"trusted-proxy", "the proxy's address: read the client's from X-Forwarded-For"},
	}},
}

// serveShortHelp is what largo serve --help says before its flags.
const serveShortHelp = `Serve the files of DIR (default: the current folder) over HTTP, or, with
--store s3://BUCKET/PREFIX, the objects of a bucket. Downloads resume
(ranges, ETags); folders are listed as a page or JSON, and sent as zip or
tar. Writes are off unless --upload (every write then needs the token) or
an access file (--access) grants them.

  largo serve                                  # this folder, read-only, on 127.0.0.1:8080
  largo serve /srv/files --listen :8080 --upload --token-file /etc/largo/token
  largo serve /srv/files --access /etc/largo/access.toml --webdav`

// helpAllFlag shows the whole help of largo serve.
const helpAllFlag = "help-all"

// setServeHelp makes cmd's --help the short one, and --help-all (a flag
// of cmd's) the whole, cobra's own.
func setServeHelp(cmd *cobra.Command) {
	whole := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if all, _ := c.Flags().GetBool(helpAllFlag); all {
			whole(c, args)
			return
		}
		writeServeHelp(c.OutOrStdout(), c)
	})
}

// writeServeHelp writes the short help of serve.
func writeServeHelp(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintf(w, "%s\n\n%s\n\nUsage:\n  %s\n", cmd.Short, serveShortHelp, cmd.UseLine())
	for _, g := range commonServeFlags {
		fmt.Fprintf(w, "\n%s:\n", g.group)
		for _, nf := range g.flags {
			f := cmd.Flags().Lookup(nf[0])
			if f == nil {
				continue
			}
			arg, _ := pflag.UnquoteUsage(f)
			name := "--" + f.Name
			if arg != "" && arg != "bool" {
				name += " " + arg
			}
			line := fmt.Sprintf("  %-26s %s", name, nf[1])
			if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" {
				line += " (default " + def + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	n := 0
	cmd.Flags().VisitAll(func(*pflag.Flag) { n++ })
	fmt.Fprintf(w, "\nEvery flag also reads LARGO_ and its name ($LARGO_MAX_UPLOAD).\nAll %d flags: largo serve --%s, or docs/serving.md (by what they are for).\n", n, helpAllFlag)
}

// countShown is the number of flags the short help shows.
func countShown() int {
	n := 0
	for _, g := range commonServeFlags {
		n += len(g.flags)
	}
	return n
}

// helpAllUsage is the usage of --help-all.
var helpAllUsage = fmt.Sprintf("show the whole help: every flag (--help shows the %d common ones)", countShown())

// addHelpAll adds --help-all to f.
func addHelpAll(f *pflag.FlagSet, all *bool) {
	f.BoolVar(all, helpAllFlag, false, helpAllUsage)
	noEnv(f, helpAllFlag)
}

// wantsHelpAll prints the whole help when --help-all was given, and
// reports whether it was.
func wantsHelpAll(cmd *cobra.Command, all bool) bool {
	if !all {
		return false
	}
	cmd.HelpFunc()(cmd, nil)
	return true
}

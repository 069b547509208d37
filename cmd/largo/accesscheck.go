package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"largo"
	"largo/auth"
)

func newAccess(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "access",
		Short: "Check an access file: who may do what, where",
		Args:  cobra.NoArgs,
	}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Print, for each path an access file's rules name, who may read, list, write and delete",
		Long: `Read the access file FILE as largo serve --access reads it (a mistake is
an error, with its line) and print, for each path its rules name, who may
read, list, write and delete there and below, until a longer path's rules
say otherwise: "anyone" (with or without a credential), "every user" (every
user of the file, not anonymous), the users by name, "anonymous", or "-"
for no one. The answers are the server's own decisions (the rules of the
longest path that name a principal, a user's own before their groups'
before "*"), asked for anonymous and for each user of the file.

A path whose rules name some users only does not take it from the others:
a rule of a path above it that names "*" or "anonymous" still gives them
what it gives. Each such path gets a warning that says so, and how to
narrow it: a rule for "*" on that path with allow = [].

Exit code 0, or 1 when FILE cannot be read or holds a mistake.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := auth.LoadFile(args[0])
			if err != nil {
				return failed(err)
			}
			explainPolicy(e.stdout, p)
			return nil
		},
	}
	documentEnv(check.Flags())
	cmd.AddCommand(check)
	documentEnv(cmd.Flags())
	return cmd
}

// explainPolicy prints who may do what at each path p's rules name, and
// the warnings of paths left open to those their rules do not name.
func explainPolicy(w io.Writer, p *auth.Policy) {
	users := p.UserNames()
	rules := p.RuleList()
	var paths []string
	for _, r := range rules {
		if !slices.Contains(paths, r.Path) {
			paths = append(paths, r.Path)
		}
	}
	slices.Sort(paths)
	fmt.Fprintf(w, "%d users: %s\n\n", len(users), orNone(strings.Join(users, ", ")))
	if len(paths) == 0 {
		fmt.Fprintln(w, "no rules: every request is refused")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tREAD\tLIST\tWRITE\tDELETE")
	for _, path := range paths {
		fmt.Fprintf(tw, "/%s", path)
		e := p.Explain(path)
		for _, perm := range []auth.Perm{auth.Read, auth.List, auth.Write, auth.Delete} {
			fmt.Fprintf(tw, "\t%s", who(e, users, perm))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	var warned bool
	for _, path := range paths {
		if msg := leftOpen(p, rules, path); msg != "" {
			if !warned {
				fmt.Fprintln(w)
				warned = true
			}
			fmt.Fprintln(w, "warning: "+msg)
		}
	}
}

// who says who may do perm at the path e explains, for the users of the
// access file: "anyone", "every user", the names (with "anonymous"), or
// "-".
func who(e auth.Explanation, users []string, perm auth.Perm) string {
	var may []string
	for _, u := range users {
		if e.User(u)&perm != 0 {
			may = append(may, u)
		}
	}
	anonymous := e.Anonymous&perm != 0
	switch {
	case anonymous && len(may) == len(users):
		return "anyone"
	case len(may) == len(users) && len(users) > 0:
		return "every user"
	case anonymous:
		may = append([]string{auth.Anonymous}, may...)
	}
	return orNone(strings.Join(may, ", "))
}

// leftOpen describes path when its rules name neither "*" nor
// "anonymous", yet anonymous may do something there by a rule of a path
// above it: a path kept, by its rules' look, to some users, that is not.
// It returns "" for a path that is not so.
func leftOpen(p *auth.Policy, rules auth.Rules, path string) string {
	if path == "" || largo.Reserved(path) {
		return ""
	}
	var named []string
	for _, r := range rules {
		if r.Path == path {
			if slices.Contains(r.Users, auth.Everyone) || slices.Contains(r.Users, auth.Anonymous) {
				return ""
			}
			named = append(named, r.Users...)
		}
	}
	has := p.Explain(path).Anonymous
	if has == 0 {
		return ""
	}
	from := ""
	for _, r := range rules {
		if r.Path != path && largo.Within(r.Path, path) && len(r.Path) >= len(from) &&
			(slices.Contains(r.Users, auth.Everyone) || slices.Contains(r.Users, auth.Anonymous)) {
			from = r.Path
		}
	}
	return fmt.Sprintf("/%s: its rules name %s only, yet anyone they do not name may %s it, by the rule for \"*\" on /%s; to keep /%s to them, add a rule for \"*\" on /%s with allow = []",
		path, strings.Join(named, ", "), permWords(has), from, path, path)
}

// orNone is s, or "-" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

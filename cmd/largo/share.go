package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"largo"
	"largo/auth"
	"largo/links"
)

// shareConfig is everything `largo share` is told.
type shareConfig struct {
	serveConfig
	url       string
	expires   time.Duration
	write     bool
	password  bool
	passFile  string
	as        string
	maxUpload sizeValue
	maxRate   sizeValue
	fileTTL   string
	maxDowns  int64
	list      bool
	revoke    string
	extend    string
}

func newShare(e *env) *cobra.Command {
	cfg := &shareConfig{}
	cmd := &cobra.Command{
		Use:   "share [PATH]",
		Short: "Make, list, extend or revoke share links",
		Long: `Print a share link to PATH (a file, or a folder and everything below it) that
works without an account until it expires. PATH is a path inside the
served folder or bucket (/docs/a.pdf), or the path of a file or folder of
this machine inside the served folder (/srv/files/docs/a.pdf, or
docs/a.pdf from the current folder); without --dir or --store, the served
folder of such a path is the nearest folder above it that holds largo's
.largo state folder.

The link starts with --url; without it, with the address the server
serving the same folder or bucket recorded in its state area when it
started (its --public-url, or the address it listens on); with neither, with
http://127.0.0.1:8080, and a warning says so. Durations (--expires,
--file-ttl) are Go durations or days and weeks: 90m, 36h, 7d, 2w. Each link is a record in the
served folder's or bucket's state area, which every largo serving it reads:
--list shows them, --revoke ID stops one (within seconds on every instance),
--extend ID --expires 48h gives one more time. The link's token is signed
with the share key: the access file's, --share-key-file's, or the one the
store keeps in its state folder (made now if there is none yet: a server
already running finds it within 5 seconds, with no restart). Rotating
the key revokes every link at once. Links expired for 30 days are
removed, with their download counts, by the server's hourly sweep.

--as USER makes the link answer to a user of the access file: it grants
only what USER may still do when it is used (a rule reloaded or the user
removed takes effect at once). A link USER cannot use today (a link to
read what USER may not read, a drop box into a folder USER may not write)
is made all the same, with a warning: it works once a rule lets USER.
Without --as, the link is the operator's, bounded by its scope alone.

--write makes a drop box instead: the link uploads new files into the
folder PATH, at most --max-upload each, and never reads, lists or replaces
anything. --password gives the link a password it will need too (at least
8 characters; sent as the password of basic auth, with any user name;
largo get and put send it from --link-password-file, $LARGO_LINK_PASSWORD
or a prompt): read from --link-password-file, else from
$LARGO_LINK_PASSWORD, else asked for twice on a terminal, else one line of
standard input.
--max-rate caps the bandwidth of everyone using the link together.

--file-ttl 7d, with --write, removes each file that lands through the drop
box that long after it landed (the server's sweep, --expiry-sweep, does it).
--max-downloads N lets a link to a file give N complete downloads, then
answer 410 Gone: a download is the file's worth of bytes sent through the
link, so that a download resumed or made in segments counts once.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShare(cmd, e, cfg, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dir, "dir", "", "the served folder (where the share key and the links' records are kept), unless --store names a bucket")
	addStoreFlags(f, &cfg.serveConfig, "where the files are: s3://BUCKET/PREFIX for a bucket (default: --dir)")
	f.StringVar(&cfg.access.accessFile, "access", "", "the server's access file (its users, and its share key if it names one)")
	f.StringVar(&cfg.access.shareKeyFile, "share-key-file", "", "the share key's file, as given to largo serve")
	f.StringVar(&cfg.url, "url", "", "the server's address, as clients reach it (default: the address the running server recorded, else http://127.0.0.1:8080 with a warning)")
	durationVar(f, &cfg.expires, "expires", 24*time.Hour, "how long the link works (with --extend: from now)")
	f.BoolVar(&cfg.write, "write", false, "a drop box: the link uploads new files into the folder PATH, never reads")
	f.BoolVar(&cfg.password, "password", false, "give the link a password it will need too: from --link-password-file, $"+linkPasswordEnv+", or asked for")
	f.StringVar(&cfg.passFile, linkPassFileFlag, "", "with --password: read the link's password from this file")
	f.StringVar(&cfg.as, "as", "", "the user of the access file the link answers to (default: the operator)")
	f.Var(&cfg.maxUpload, "max-upload", "with --write: the largest file the drop box takes, such as 1GiB (default: the server's --link-max-upload)")
	f.Var(&cfg.maxRate, "max-rate", "the link's bandwidth cap, shared by every transfer through it, in bytes per second each way, such as 5MB (default: the server's --rate-per-link, which also governs when lower)")
	f.StringVar(&cfg.fileTTL, "file-ttl", "", "with --write: remove each file that lands through the drop box this long after it landed, such as 7d or 36h")
	f.Int64Var(&cfg.maxDowns, "max-downloads", 0, "for a link to a file: the complete downloads it gives before it answers 410 Gone (a resumed or segmented download counts once)")
	f.BoolVar(&cfg.list, "list", false, "list the links (with --as, those USER made)")
	f.StringVar(&cfg.revoke, "revoke", "", "revoke the link with this ID")
	f.StringVar(&cfg.extend, "extend", "", "give the link with this ID --expires more, from now")
	noEnv(f, "password") // $LARGO_PASSWORD is a user's password, for get and put
	documentEnv(f)
	return cmd
}

func runShare(cmd *cobra.Command, e *env, cfg *shareConfig, args []string) error {
	actions := 0
	for _, on := range []bool{cfg.list, cfg.revoke != "", cfg.extend != "", len(args) == 1} {
		if on {
			actions++
		}
	}
	if actions != 1 {
		return usageErr(errors.New("give PATH, --list, --revoke ID or --extend ID: one of them"))
	}
	if cfg.expires <= 0 {
		return usageErr(errors.New("--expires must be positive"))
	}
	ctx := cmd.Context()
	var local *string // PATH as a name inside a served folder of this machine
	if len(args) == 1 {
		name, ok, err := localSharePath(&cfg.serveConfig, args[0])
		if err != nil {
			return err
		}
		if ok {
			local = &name
		}
	}
	if cfg.dir == "" {
		cfg.dir = "."
	}
	st, _, err := openStore(ctx, e, &cfg.serveConfig)
	if err != nil {
		return err
	}
	defer st.Close()
	p := auth.OneUser("", false)
	if cfg.access.accessFile != "" {
		if p, err = auth.LoadFile(cfg.access.accessFile); err != nil {
			return usageErr(err)
		}
	}
	if cfg.as != "" && !p.Knows(cfg.as) {
		return usageErr(fmt.Errorf("--as %s: no such user in the access file", cfg.as))
	}
	sk, ok := st.(largo.StateKeeper)
	if !ok {
		return failed(errors.New("share links need a state area to keep their records in: this store has none"))
	}
	ls, err := newLinks(ctx, &cfg.access, p, sk.State())
	if ls == nil {
		return err
	}
	if err != nil {
		return failed(err)
	}
	all := cfg.as == ""
	base := shareBase(ctx, e, cfg, sk.State())
	switch {
	case cfg.list:
		list, err := ls.List(ctx, cfg.as, all)
		if err == nil {
			err = printLinks(ctx, e, base, ls, list)
		}
		if err != nil {
			return failed(err)
		}
		return nil
	case cfg.revoke != "":
		if err := ls.Revoke(ctx, cfg.revoke, cfg.as, all); err != nil {
			return failed(fmt.Errorf("--revoke %s: %v", cfg.revoke, pathErrText(err)))
		}
		fmt.Fprintf(e.stdout, "revoked %s\n", cfg.revoke)
		return nil
	case cfg.extend != "":
		l, err := ls.Extend(ctx, cfg.extend, cfg.as, all, time.Now().Add(cfg.expires))
		if err != nil {
			return failed(fmt.Errorf("--extend %s: %v", cfg.extend, pathErrText(err)))
		}
		fmt.Fprintf(e.stdout, "%s now expires %s\n", l.ID, l.Expires.Local().Format(time.RFC3339))
		return nil
	}
	return makeShare(cmd, e, cfg, st, ls, p, base, args[0], local)
}

// makeShare makes a link to target (or to *local, the name inside the
// served folder of the local path target, when target is no name the
// store has) and prints it under base.
func makeShare(cmd *cobra.Command, e *env, cfg *shareConfig, st largo.Store, ls *links.Links, p *auth.Policy, base, target string, local *string) error {
	name, err := largo.ParseName("/" + strings.TrimPrefix(target, "/"))
	if err == nil && largo.Reserved(name) {
		err = largo.ErrReservedName
	}
	if local != nil {
		if _, serr := st.Stat(cmd.Context(), name); err != nil || serr != nil {
			name, err = *local, nil
		}
	}
	if err != nil {
		return usageErr(fmt.Errorf("PATH %q: not a path largo serves", target))
	}
	in, err := st.Stat(cmd.Context(), name)
	switch {
	case err != nil:
		return usageErr(fmt.Errorf("PATH %s: %v in the served folder or bucket (a path inside it, such as /docs/a.pdf, or a file of this machine inside the served folder)", target, pathErrText(err)))
	case cfg.write && !in.IsDir:
		return usageErr(fmt.Errorf("--write: %s is not a folder", target))
	case !cfg.write && cfg.maxUpload != 0:
		return usageErr(errors.New("--max-upload goes with --write: only a drop box takes uploads"))
	}
	l := links.Link{Path: name, Maker: cfg.as, Expires: time.Now().Add(cfg.expires), MaxUpload: int64(cfg.maxUpload), MaxRate: int64(cfg.maxRate), MaxDownloads: cfg.maxDowns}
	if cfg.fileTTL != "" {
		ttl, err := largo.ParseAge(cfg.fileTTL)
		switch {
		case err != nil:
			return usageErr(fmt.Errorf("--file-ttl: %v", err))
		case ttl < time.Second:
			return usageErr(errors.New("--file-ttl: at least a second"))
		case !cfg.write:
			return usageErr(errors.New("--file-ttl goes with --write: only a drop box receives files"))
		}
		l.FileTTL = int64(ttl / time.Second)
	}
	switch {
	case cfg.maxDowns < 0:
		return usageErr(errors.New("--max-downloads: a positive number"))
	case cfg.maxDowns > 0 && (cfg.write || in.IsDir):
		return usageErr(errors.New("--max-downloads goes with a link to a file"))
	}
	switch {
	case cfg.write:
		l.Kind = links.Drop
	case in.IsDir:
		l.Kind = links.Folder
	default:
		l.Kind = links.File
	}
	var password string
	if cfg.password {
		if password, err = newLinkPassword(e, cfg.passFile); err != nil {
			return err
		}
		if len([]rune(password)) < links.MinPassword {
			return usageErr(links.ErrShortPassword)
		}
	}
	if cfg.as != "" {
		warnUnusable(e, p, cfg.as, l)
	}
	token, l, err := ls.Make(cmd.Context(), l, password)
	if err != nil {
		return failed(err)
	}
	fmt.Fprintln(e.stdout, base+l.URLPath(token))
	return nil
}

// newLinkPassword is the password of a new link: from file, else from
// $LARGO_LINK_PASSWORD, else asked for (twice on a terminal, else one
// line of standard input).
func newLinkPassword(e *env, file string) (string, error) {
	s, err := fileOrEnv(file, linkPassFileFlag, linkPasswordEnv, e.getenv)
	if err != nil || s.value != "" {
		return s.value, err
	}
	return readSecret(e, "Link password: ", true)
}

// printLinks prints list as a table, with their URLs under base.
func printLinks(ctx context.Context, e *env, base string, ls *links.Links, list []links.Link) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tPATH\tMAKER\tEXPIRES\tLIMITS\tURL")
	now := time.Now()
	for i := range list {
		l := &list[i]
		token, err := ls.Token(ctx, l)
		if err != nil {
			return err
		}
		maker, exp := l.Maker, l.Expires.Local().Format(time.RFC3339)
		if maker == "" {
			maker = "(operator)"
		}
		if !now.Before(l.Expires) {
			exp += " (expired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t/%s\t%s\t%s\t%s\t%s\n", l.ID, l.Kind, l.Path, maker, exp, linkLimits(ctx, ls, l), base+l.URLPath(token))
	}
	return tw.Flush()
}

// linkLimits describes every limit of a link: its password, bandwidth
// cap, download limit (downloads used/limit), a drop box's largest file
// and file TTL; "-" for none.
func linkLimits(ctx context.Context, ls *links.Links, l *links.Link) string {
	var parts []string
	if l.Password != "" {
		parts = append(parts, "password: yes")
	}
	if l.MaxRate > 0 {
		parts = append(parts, "max rate "+largo.FormatSize(l.MaxRate)+"/s")
	}
	if l.MaxDownloads > 0 {
		used := "?"
		if c, err := ls.Downloads(ctx, l.ID); err == nil {
			used = strconv.FormatInt(c.Used, 10)
		}
		parts = append(parts, fmt.Sprintf("downloads %s/%d", used, l.MaxDownloads))
	}
	if l.MaxUpload > 0 {
		parts = append(parts, "max upload "+largo.FormatSize(l.MaxUpload))
	}
	if l.FileTTL > 0 {
		parts = append(parts, "files expire after "+largo.FormatAge(time.Duration(l.FileTTL)*time.Second))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// defaultShareBase is the base of links when neither --url nor a running
// server gives one.
const defaultShareBase = "http://127.0.0.1:8080"

// shareBase is the base URL of the links printed: --url, else the
// address the running server recorded in state (address.go), else
// defaultShareBase with a warning.
func shareBase(ctx context.Context, e *env, cfg *shareConfig, state largo.State) string {
	if cfg.url != "" {
		return strings.TrimSuffix(cfg.url, "/")
	}
	u, ok, gone, err := recordedAddress(ctx, state)
	if ok {
		return strings.TrimSuffix(u, "/")
	}
	why := "no server serving it has recorded its address"
	switch {
	case err != nil:
		why = "its servers' addresses cannot be read (" + err.Error() + ")"
	case gone != "":
		why = "the server that recorded " + gone + " is gone"
	}
	fmt.Fprintf(e.stderr, "largo: warning: %s: the links start with %s, which may not reach the server: give --url\n", why, defaultShareBase)
	return defaultShareBase
}

// localSharePath reads PATH as the path of a file or folder of this
// machine inside a served folder, and returns its name there, or "" when
// it is none (PATH is then a name inside the store). The served folder
// is --dir (or a folder --store), or, when neither is given, the nearest
// folder above PATH that holds largo's state folder, which then becomes
// --dir.
func localSharePath(cfg *serveConfig, target string) (name string, ok bool, err error) {
	abs, aerr := filepath.Abs(target)
	if aerr != nil {
		return "", false, nil
	}
	fi, serr := os.Stat(abs)
	if serr != nil {
		return "", false, nil
	}
	root := cmp.Or(cfg.dir, cfg.store)
	switch {
	case strings.Contains(root, "://"):
		return "", false, nil // a bucket: PATH is a name in it
	case root == "":
		start := abs
		if !fi.IsDir() {
			start = filepath.Dir(abs)
		}
		found, ok := stateRoot(start)
		if !ok {
			return "", false, nil
		}
		root = found
	}
	rootAbs, rerr := filepath.Abs(root)
	if rerr != nil {
		return "", false, nil
	}
	rel, lerr := filepath.Rel(rootAbs, abs)
	if lerr != nil || rel != "." && !filepath.IsLocal(rel) {
		return "", false, nil
	}
	if rel != "." {
		name, err = largo.ParseName("/" + filepath.ToSlash(rel))
		if err != nil || largo.Hidden(name) {
			return "", false, usageErr(fmt.Errorf("PATH %s: not a name largo serves", target))
		}
	}
	if cfg.dir == "" && cfg.store == "" {
		cfg.dir = rootAbs
	}
	return name, true, nil
}

// warnUnusable warns when the user a link answers to cannot, today, do
// what the link gives: read a file, read and list a folder, write into a
// drop box's folder. The link is made all the same: it grants what its
// maker may do when it is used, and a rule may come.
func warnUnusable(e *env, p *auth.Policy, user string, l links.Link) {
	need := map[links.Kind]auth.Perm{links.File: auth.Read, links.Folder: auth.Read | auth.List, links.Drop: auth.Write}[l.Kind]
	if has := p.Allowed(user, l.Path); has&need != need {
		fmt.Fprintf(e.stderr, "largo: warning: the access rules do not let %s %s /%s: the link gives nothing until they do\n", user, permWords(need&^has), l.Path)
	}
}

// permWords names the permissions of p: "read and list".
func permWords(p auth.Perm) string {
	var words []string
	for _, w := range []struct {
		p    auth.Perm
		word string
	}{{auth.Read, "read"}, {auth.List, "list"}, {auth.Write, "write into"}, {auth.Delete, "delete"}} {
		if p&w.p != 0 {
			words = append(words, w.word)
		}
	}
	return strings.Join(words, " and ")
}

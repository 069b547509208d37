package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TreeResult sums up the transfer of a folder tree.
type TreeResult struct {
	Files    int   // files transferred in this run
	UpToDate int   // files that were already in place
	Failed   int   // files that failed
	Bytes    int64 // bytes of the files transferred or in place
	Moved    int64 // bytes moved over the network
	// Verified counts the files downloaded in this run that were checked
	// against the server's digest; the others had none to check (files
	// already in place were checked when they were downloaded).
	Verified int
}

func (t *TreeResult) add(r Result) {
	t.Bytes += r.Size
	t.Moved += r.Moved
	if r.UpToDate {
		t.UpToDate++
	} else {
		t.Files++
	}
	if r.Verified != "" && !r.UpToDate {
		t.Verified++
	}
}

// maxDepth bounds how deep a folder tree is followed: a server cannot lead
// a download on for ever.
const maxDepth = 64

// entry is one item of largo's JSON folder listing.
type entry struct {
	Name     string    `json:"name"`
	Dir      bool      `json:"dir"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// GetTree downloads the folder at rawURL, read from largo's JSON listing
// (GET with Accept: application/json), into the local folder dir,
// recursively. Files already in place (same size and modification time) are
// skipped without a request, others resumed or fetched; each must arrive
// with the size the listing gives, and match the server's digest when it
// gives one, or it is not kept. A name that cannot be a file of dir (a
// path separator, "..", a hidden or empty name) is refused. A failed file is
// reported through Logf and the others go on; a stop (ctx done, retries
// exhausted) ends the whole tree with an error wrapping ErrResumable.
func (c *Client) GetTree(ctx context.Context, rawURL, dir string) (TreeResult, error) {
	var tr TreeResult
	u, err := url.Parse(rawURL)
	if err != nil {
		return tr, err
	}
	if err := checkURL(u); err != nil {
		return tr, err
	}
	if !strings.HasSuffix(u.Path, "/") {
		raw := u.EscapedPath()
		u.Path += "/"
		u.RawPath = raw + "/"
	}
	err = c.getTree(ctx, u, dir, 0, &tr)
	if err == nil && tr.Failed > 0 {
		err = fmt.Errorf("%d of %d files failed", tr.Failed, tr.Failed+tr.Files+tr.UpToDate)
	}
	return tr, err
}

func (c *Client) getTree(ctx context.Context, u *url.URL, dir string, depth int, tr *TreeResult) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: folders nested deeper than %d", u.Redacted(), maxDepth)
	}
	entries, err := c.listing(ctx, u)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return localError{err}
	}
	for _, e := range entries {
		if why := unsafeTreeName(e.Name); why != "" {
			c.logf("%s: refusing the name %q: %s cannot be a file in %s", u.Redacted(), e.Name, why, dir)
			tr.Failed++
			continue
		}
		child := childURL(u, e.Name, e.Dir)
		local := filepath.Join(dir, e.Name)
		if e.Dir {
			if err := c.getTree(ctx, child, local, depth+1, tr); err != nil {
				if errors.Is(err, ErrResumable) || unauthorized(err) {
					return err
				}
				c.logf("%s: %v", local, err)
				tr.Failed++
			}
			continue
		}
		if inPlace(local, e) {
			tr.add(Result{Path: local, Size: e.Size, UpToDate: true})
			continue
		}
		res, err := c.get(ctx, child.String(), local, e.Size)
		switch {
		case errors.Is(err, ErrResumable), unauthorized(err):
			return err
		case err != nil:
			c.logf("%s: %v", local, err)
			tr.Failed++
		default:
			tr.add(res)
		}
	}
	return nil
}

// inPlace reports whether local already holds the listed file: the same
// size and modification time (to the second, as Last-Modified has it), and
// no part file beside it.
func inPlace(local string, e entry) bool {
	fi, err := os.Stat(local)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.Size {
		return false
	}
	if _, err := os.Stat(local + ".part"); err == nil {
		return false
	}
	return fi.ModTime().Truncate(time.Second).Equal(e.Modified.Truncate(time.Second))
}

// listing fetches a folder's JSON listing, retrying.
func (c *Client) listing(ctx context.Context, u *url.URL) ([]entry, error) {
	r := c.retrier()
	for {
		entries, err := c.listingOnce(ctx, u)
		if err == nil {
			return entries, nil
		}
		if err = r.again(ctx, err); err != nil {
			return nil, err
		}
	}
}

func (c *Client) listingOnce(ctx context.Context, u *url.URL) ([]entry, error) {
	actx, wd := c.watch(ctx)
	defer wd.stop()
	req, err := c.newRequest(actx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.do(req)
	if err != nil {
		return nil, cause(actx, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("%s: no JSON folder listing (Content-Type %q): -r needs a largo server", u.Redacted(), mt)
	}
	var l struct {
		Entries []entry `json:"entries"`
	}
	if err := json.NewDecoder(&touchReader{r: resp.Body, w: wd}).Decode(&l); err != nil {
		return nil, cause(actx, transient("%s: reading the listing: %v", u.Redacted(), err))
	}
	return l.Entries, nil
}

// PutTree uploads the files below the local folder dir to d, keeping their
// relative paths. Names starting with a dot are skipped (largo never serves
// them), as are files that are not regular (symlinks are followed when
// they lead to one), and files the server already holds whole (inplace.go),
// counted in UpToDate. A failed file is reported through Logf and the others
// go on; a stop ends the tree with an error wrapping ErrResumable.
func (c *Client) PutTree(ctx context.Context, dir string, d *Destination) (TreeResult, error) {
	var tr TreeResult
	if d.Name != "" {
		d.Folder = strings.Trim(d.Folder+"/"+d.Name, "/")
		if d.Plain || d.IETF {
			d.URL = d.URL.JoinPath("/")
		}
		d.Name = ""
	}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			c.logf("%v", err)
			tr.Failed++
			return nil
		}
		if p != dir && strings.HasPrefix(de.Name(), ".") {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			c.logf("%s: skipped: not a regular file", p)
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		there, err := c.inPlace(ctx, p, fi, d, filepath.ToSlash(rel))
		if errors.Is(err, ErrResumable) {
			return err
		}
		if there {
			tr.add(Result{Path: p, Size: fi.Size(), UpToDate: true})
			return nil
		}
		res, err := c.Put(ctx, p, d, rel)
		switch {
		case errors.Is(err, ErrResumable), unauthorized(err):
			return err
		case err != nil:
			c.logf("%s: %v", p, err)
			tr.Failed++
		default:
			tr.add(res)
		}
		return nil
	})
	if err == nil && tr.Failed > 0 {
		err = fmt.Errorf("%d of %d files failed", tr.Failed, tr.Failed+tr.Files+tr.UpToDate)
	}
	return tr, err
}

// unauthorized reports whether err is a 401: the sign-in failed, and so
// would the next file's; a tree ends at the first.
func unauthorized(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusUnauthorized
}

// unsafeTreeName says why a name a listing gives may not become a local
// file of a recursive download, or returns "" when it may: it must be one
// plain path element (see safeName), not hidden (a hostile server must not
// plant .ssh/ or .bashrc in the target folder), and hold no control byte
// (no terminal escape in a file name).
func unsafeTreeName(name string) string {
	switch {
	case name == "":
		return "an empty name"
	case name == "." || name == "..":
		return "a dot name"
	case strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator):
		return "a name with a path separator"
	case strings.HasPrefix(name, "."):
		return "a hidden name"
	case strings.ContainsFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return "a name with a control character"
	case !safeName(name):
		return "a name this system reserves"
	}
	return ""
}

// childURL is the URL of the entry name of the folder at u (whose path
// ends in a slash): name escaped as one path element, whatever it holds
// (%, #, ?, spaces, a backslash...), with a trailing slash for a folder.
func childURL(u *url.URL, name string, dir bool) *url.URL {
	c := *u
	c.Path = u.Path + name
	c.RawPath = u.EscapedPath() + url.PathEscape(name)
	if dir {
		c.Path += "/"
		c.RawPath += "/"
	}
	return &c
}

package ui

import (
	"errors"
	"io"
	"iter"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"largo"
)

// Entry is one item of a folder page. A zero Modified (a bucket's folders
// have no time) shows no time and sorts as the oldest.
type Entry struct {
	Name     string
	Dir      bool
	Size     int64
	Modified time.Time
	// ETag is a file's, as listed: the page's changes to the file are
	// made on condition that it still has it (If-Match). "" for none.
	ETag string
	// Expires is when the file will be removed; zero for never.
	Expires time.Time
}

// Upload describes the upload area of a page whose requester may write
// in its folder. The page asks for no credential: uploads carry the one
// the browser holds for the server (see Folder.SignIn).
type Upload struct {
	// Endpoint is the URL path of the tus 1.0 endpoint.
	Endpoint string
	// Heading is the area's heading; "" means "Upload".
	Heading string
	// Scope keeps apart, in the browser's storage, the uploads of pages
	// that must not see each other's (a drop box's: its link's ID); ""
	// is the server's own pages'.
	Scope string
	// FilesOnly takes files and no folders: a drop box writes directly
	// in its folder.
	FilesOnly bool
	// CreateOnly: a name already taken is refused (a drop box), which
	// the page says in words when the server answers so.
	CreateOnly bool
}

// Share describes the share form of a page.
type Share struct {
	// Endpoint is the URL path the form posts to.
	Endpoint string
	// Write offers a drop box too: the visitor may write here.
	Write bool
}

// Manage describes the file management a page offers its visitor: a
// checkbox on each row, and for a selection or one entry, an archive of
// it, a move, a removal; a new folder; share links. Its script asks the
// server (May) what the visitor may do with each entry before it shows
// an action; what they may do in the folder itself is known when the
// page is rendered. Endpoints are URL paths; "" leaves their actions
// out.
type Manage struct {
	// May answers what may be done with entries (see pageapi.MayPath).
	May string
	// Archive answers a selection as one archive (pageapi.SelectionPath).
	Archive string
	// Move moves and renames (pageapi.MovePath); "" when writes are off.
	Move string
	// Mkdir makes folders (pageapi.MkdirPath); "" when the visitor may
	// make none here.
	Mkdir string
	// Search finds names below the folder (pageapi.SearchPath).
	Search string
	// Share makes share links of entries, and Links lists and revokes
	// the visitor's (pageapi.SharePath, pageapi.LinksPath); "" when links
	// are off or nobody is signed in.
	Share, Links string
	// Rename and Delete: the folder's rules let the visitor rename and
	// delete its entries (the page's help names their keys only then;
	// each entry is asked again, May).
	Rename, Delete bool
}

// Folder is what a folder page shows.
type Folder struct {
	// Name is the folder's store name: "" for the root, "a/b" below it.
	Name string
	// Root is the highest folder the visitor may reach through the page,
	// Name or a folder above it: a share link's folder. The breadcrumb
	// starts there and it has no parent link. "" is the store's root.
	Root string
	// Entries are the folder's entries, in any order: the page sorts and
	// filters them as View says.
	Entries []Entry
	// View is the order and filter asked for in the query.
	View View
	// Upload is the upload area; nil where the requester may not write.
	Upload *Upload
	// User is who is signed in, by the name the page shows; "" for an
	// anonymous visitor, or for the holder of the server's one token
	// who gave no name (ByToken).
	User string
	// ByToken: the visitor signed in with the server's one token
	// (--token), which is no user's; User is the name they gave, if any.
	ByToken bool
	// SignOut is the URL that signs the visitor out; "" shows none.
	SignOut string
	// May is what User may do in this folder, by permission name
	// ("read", "list", "write", "delete"), in that order.
	May []string
	// Share, when set, offers the signed-in visitor a form that makes a
	// share link to this folder.
	Share *Share
	// Manage, when set, offers the file management it describes; nil
	// (a share link's page) offers only previews and downloads.
	Manage *Manage
	// SignIn is the URL of the "Sign in" link shown to an anonymous
	// visitor where signing in could allow more; "" shows none.
	SignIn string
	// Archives are the formats the folder can be downloaded as, by their
	// ?archive= values ("zip", "tar"...), in the order to show them.
	Archives []string
	// Visible, when set, is who may see the folder (list it or read its
	// files), as the page says it under its heading.
	Visible *Visible
	// Nonce is the nonce of the policy the page is sent with (CSP, with
	// a new Nonce for each response); required.
	Nonce string
}

// Visible is who may see a folder, by the access rules.
type Visible struct {
	// Anonymous: a visitor without a credential may.
	Anonymous bool
	// SignedIn: every signed-in user may, but those in Except.
	SignedIn bool
	// Names are the users and groups ("group:NAME") who may, when
	// SignedIn is false; Except those who may not, when it is true.
	Names, Except []string
}

// String says who in a few words: "everyone", "every signed-in user but
// bob", "alice and the group admins".
func (v *Visible) String() string {
	var who string
	switch {
	case v.Anonymous && v.SignedIn:
		who = "everyone"
	case v.SignedIn:
		who = "every signed-in user"
	case v.Anonymous:
		who = sentence(append([]string{"visitors who are not signed in"}, people(v.Names)...))
	case len(v.Names) == 0:
		return "no user (only through share links)"
	default:
		return sentence(people(v.Names))
	}
	if len(v.Except) > 0 {
		who += " but " + sentence(people(v.Except))
	}
	return who
}

// people writes users and groups as a sentence names them: "alice",
// "the group admins".
func people(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		if g, ok := strings.CutPrefix(n, "group:"); ok {
			n = "the group " + g
		}
		out[i] = n
	}
	return out
}

// Folder writes the HTML page of f to w. It fails, writing nothing, when
// f has no Nonce.
func (u *UI) Folder(w io.Writer, f Folder) error {
	shown := f.View.Apply(f.Entries)
	return u.FolderRows(w, f, len(f.Entries), func(yield func(Entry, error) bool) {
		for _, e := range shown {
			if !yield(e, nil) {
				return
			}
		}
	})
}

// FolderRows writes the HTML page of f to w with the rows of shown, which
// are already filtered and ordered as f.View says, out of a folder of
// total entries; f.Entries is not used. The rows are written as they come,
// so a page of any length costs one row's memory; the counts under the
// table are made on the way. An error from shown ends the page there and
// is returned.
func (u *UI) FolderRows(w io.Writer, f Folder, total int, shown iter.Seq2[Entry, error]) error {
	if f.Nonce == "" {
		return errors.New("ui: a folder page needs the nonce of its policy")
	}
	p := newPage(f)
	page := u.page()
	if err := page.ExecuteTemplate(w, "head", p); err != nil {
		return err
	}
	var sum counts
	var r row
	for e, err := range shown {
		if err != nil {
			return err
		}
		sum.add(e)
		r.set(e)
		r.Picks = p.Manage != nil
		if err := page.ExecuteTemplate(w, "row", &r); err != nil {
			return err
		}
	}
	p.Summary = sum.summary(total)
	switch {
	case total == 0:
		p.Empty = "This folder is empty."
	case sum.shown() == 0:
		p.Empty = "No name matches the filter."
	}
	return page.ExecuteTemplate(w, "foot", p)
}

// page is the data the template renders: every value already formatted,
// so the template only places and escapes.
type page struct {
	Title    string
	Path     string // the folder's URL path, unescaped, with a slash at each end
	Folder   string // the store name, for the upload metadata
	Crumbs   []crumb
	Columns  []column
	Parent   bool
	View     View
	Summary  string
	Empty    string // what the table says when no row shows
	Upload   *Upload
	Archives []archiveLink
	User     string
	ByToken  bool
	May      string // "read, list and write"
	SignIn   string
	SignOut  string
	Share    *Share
	Manage   *Manage
	Visible  string // who may see the folder; "" says nothing
	Nonce    string
}

type crumb struct {
	Name    string
	Href    string
	Current bool
}

type column struct {
	Key, Label, Class string
	Href              string
	Sort              string // aria-sort: "ascending", "descending" or ""
}

type row struct {
	Name, Href, Size, Modified, ISO, Stamp, ETag string
	Expires, ExpiresISO                          string
	Dir                                          bool
	Bytes                                        int64
	Picks                                        bool // a checkbox to select the row
}

// set fills r with e, formatted.
func (r *row) set(e Entry) {
	// A name on disk that could pass for another (bidi overrides,
	// invisible characters, bytes that are not UTF-8) is shown escaped;
	// its link still names the file itself.
	*r = row{Name: largo.EscapeName(e.Name), Href: Href(e.Name, e.Dir), Dir: e.Dir, Bytes: e.Size}
	if !e.Dir {
		r.ETag = e.ETag
	}
	if !e.Modified.IsZero() { // a bucket's folders have no time
		r.Modified = FormatTime(e.Modified)
		r.ISO = e.Modified.UTC().Format(time.RFC3339)
		r.Stamp = e.Modified.UTC().Format(time.RFC3339Nano)
	}
	if !e.Dir {
		r.Size = largo.FormatSize(e.Size)
	}
	if !e.Dir && !e.Expires.IsZero() {
		r.Expires = FormatTime(e.Expires)
		r.ExpiresISO = e.Expires.UTC().Format(time.RFC3339)
	}
}

type archiveLink struct{ Format, Href string }

// newPage prepares what f shows above and below the rows.
func newPage(f Folder) page {
	p := page{Path: "/", Folder: f.Name, View: f.View, Upload: f.Upload, Parent: f.Name != f.Root, User: f.User, ByToken: f.ByToken, May: sentence(f.May), SignOut: f.SignOut, Nonce: f.Nonce, Share: f.Share, Manage: f.Manage}
	if f.User == "" && !f.ByToken {
		p.SignIn = f.SignIn
	}
	if f.Visible != nil {
		p.Visible = f.Visible.String()
	}
	if f.Name != "" {
		p.Path = "/" + f.Name + "/"
	}
	// The heading names the folder as its visitor reaches it: below a
	// share link's folder, relative to it, never by the path the link
	// stands for.
	p.Title = "/"
	if rel := strings.TrimPrefix(strings.TrimPrefix(f.Name, f.Root), "/"); rel != "" {
		p.Title = "/" + largo.EscapeName(rel) + "/"
	}
	p.Crumbs = crumbs(f.Name, f.Root)
	p.Columns = columns(f.View)
	for _, format := range f.Archives {
		p.Archives = append(p.Archives, archiveLink{Format: format, Href: "?archive=" + url.QueryEscape(format)})
	}
	return p
}

// crumbs returns the breadcrumb of a folder: the root ("Home", or the
// folder root when the visitor may reach no higher), then each folder
// down to name, each linked by a relative path.
func crumbs(name, root string) []crumb {
	c := []crumb{{Name: "Home"}}
	rest := name
	if root != "" {
		c[0].Name = path.Base(root)
		rest = strings.TrimPrefix(strings.TrimPrefix(name, root), "/")
	}
	var parts []string
	if rest != "" {
		parts = strings.Split(rest, "/")
	}
	for _, p := range parts {
		c = append(c, crumb{Name: largo.EscapeName(p)})
	}
	for i := range c {
		up := len(c) - 1 - i
		c[i].Href = "./" + strings.Repeat("../", up)
		c[i].Current = up == 0
	}
	return c
}

// columns returns the sortable headers: each links to its own sort, in its
// natural first order, or to the reverse of the current order.
func columns(v View) []column {
	cols := []column{
		{Key: SortName, Label: "Name", Class: "name"},
		{Key: SortSize, Label: "Size", Class: "size"},
		{Key: SortModified, Label: "Modified (UTC)", Class: "mod"},
	}
	for i := range cols {
		c := &cols[i]
		next := View{Sort: c.Key, Desc: defaultDesc(c.Key), Filter: v.Filter}
		if v.Sort == c.Key {
			next.Desc = !v.Desc
			c.Sort = "ascending"
			if v.Desc {
				c.Sort = "descending"
			}
		}
		c.Href = next.Query()
	}
	return cols
}

// counts are the tallies of the rows shown, for the line under the table.
type counts struct {
	dirs, files int
	bytes       int64
}

func (c *counts) add(e Entry) {
	if e.Dir {
		c.dirs++
	} else {
		c.files++
		c.bytes += e.Size
	}
}

func (c *counts) shown() int { return c.dirs + c.files }

// summary is the line under the table: counts and the total size of the
// files shown, and how many of all were shown when a filter hid some.
func (c *counts) summary(all int) string {
	s := plural(c.dirs, "folder") + ", " + plural(c.files, "file") + ", " + largo.FormatSize(c.bytes)
	if c.shown() < all {
		s += " (" + itoa(c.shown()) + " of " + itoa(all) + " shown)"
	}
	return s
}

// sentence joins words as a list in a sentence: "a", "a and b", "a, b
// and c".
func sentence(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return itoa(n) + " " + word + "s"
}

func itoa(n int) string { return strconv.Itoa(n) }

// Href is the relative link to an entry of a folder page: "./" first, so
// that a name with a colon never reads as a URL scheme, and a trailing
// slash for folders.
func Href(name string, dir bool) string {
	u := "./" + (&url.URL{Path: name}).EscapedPath()
	if dir {
		u += "/"
	}
	return u
}

// FormatTime is how a page shows a modification time: UTC, to the minute.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

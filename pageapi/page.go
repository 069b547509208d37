package pageapi

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ui"
)

// Controls sets what the page of the folder f.Name offers its visitor
// besides its rows and its upload area (f.Upload, set by the file tree):
// who is signed in and what they may do there, and how to sign out, or
// the link that signs in (SignIn, the Login route); who may see the
// folder; the share form; and the file manager, whose routes are this
// package's, each offered where the gate would let its request through.
// A share link's page offers none of these: its visitor reaches no route
// of the reserved prefix.
func (a *API) Controls(r *http.Request, f *ui.Folder) {
	ctx, name := r.Context(), f.Name
	a.signedIn(r, f)
	signedIn := principal(r).UserName() != ""
	links := a.gate.Links() != nil
	if signedIn && links && a.gate.Check(ctx, auth.Read|auth.List, name, false) == nil {
		f.Share = &ui.Share{Endpoint: SharePath, Write: f.Upload != nil}
	}
	if principal(r).LinkID() != "" {
		return
	}
	f.Visible = a.visible(name)
	// What may be done with each entry is asked when needed (MayPath).
	m := &ui.Manage{May: MayPath, Search: SearchPath}
	if a.cfg.Archives != nil {
		m.Archive = SelectionPath
	}
	if a.cfg.Writes != nil {
		m.Move = MovePath
		entry := largo.Join(name, gate.NewName) // what the folder's rules say of its entries
		write := a.gate.Check(ctx, auth.Write, entry, false) == nil
		if write {
			m.Mkdir = MkdirPath
		}
		m.Delete = a.gate.Check(ctx, auth.Delete, entry, false) == nil
		m.Rename = write && m.Delete && a.gate.Check(ctx, auth.Read, name, false) == nil
	}
	if signedIn && links {
		m.Share, m.Links = SharePath, LinksPath
	}
	f.Manage = m
}

// visible is who may see the folder name (list it, or read its files),
// as the access rules in force say (auth.Policy.Explain).
func (a *API) visible(name string) *ui.Visible {
	w := a.gate.Access().Policy().Explain(name).Who(auth.Read | auth.List)
	return &ui.Visible{Anonymous: w.Anonymous, SignedIn: w.SignedIn, Names: w.Names, Except: w.Except}
}

// maxShownName bounds the name a holder of the server's one token gave
// that the page shows.
const maxShownName = 64

// signedIn sets what a page says of its requester: who they are, what
// they may do on the folder, and how to sign out (when the browser sent
// a credential of its own, which signing out makes it forget); or, for an
// anonymous visitor of a server with users, the link that signs in and
// comes back to the folder. The holder of the server's one token (--token)
// is shown by the name they gave with it, which is theirs to choose. A
// share link's visitor gets none of it.
func (a *API) signedIn(r *http.Request, f *ui.Folder) {
	p, name := principal(r), f.Name
	pol := a.gate.Access().Policy()
	switch {
	case p.LinkID() != "":
	case p.UserName() != "":
		for _, perm := range []auth.Perm{auth.Read, auth.List, auth.Write, auth.Delete} {
			if a.gate.Check(r.Context(), perm, name, false) == nil {
				f.May = append(f.May, perm.String())
			}
		}
		f.User = p.UserName()
		given, _, basic := r.BasicAuth()
		if pol.Nameless(f.User) {
			f.ByToken, f.User = true, ""
			if basic && given != "" && len(given) <= maxShownName && utf8.ValidString(given) {
				f.User = largo.EscapeName(given)
			}
		}
		if basic {
			f.SignOut = "/?logout=" + url.QueryEscape(a.signedOut(r, name))
		}
	case pol.Users() > 0:
		f.SignIn = "/?login=" + url.QueryEscape(folderPath(name))
	}
}

// signedOut is where signing out of the folder name's page returns: the
// folder, where a visitor who is not signed in may see it, else the root.
func (a *API) signedOut(r *http.Request, name string) string {
	anon := gate.With(r.Context(), gate.Anonymous())
	if a.gate.Check(anon, auth.List, name, false) == nil {
		return folderPath(name)
	}
	return "/"
}

// folderPath is the URL path of the folder name, unescaped, with a slash
// at each end.
func folderPath(name string) string {
	if name == "" {
		return "/"
	}
	return "/" + strings.Trim(name, "/") + "/"
}

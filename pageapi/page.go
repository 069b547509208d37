package pageapi

import (
	"net/http"
	"net/url"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ui"
)

// Controls sets what the page of the folder f.Name offers its visitor
// besides its rows and its upload area (f.Upload, set by the file tree):
// who is signed in and what they may do there, or the link that signs
// in (SignIn, the Login route); who may see the folder; the share form; and the file manager,
// whose routes are this package's, each offered where the gate would let
// its request through. A share link's page offers none of these: its
// visitor reaches no route of the reserved prefix.
func (a *API) Controls(r *http.Request, f *ui.Folder) {
	ctx, name := r.Context(), f.Name
	f.User, f.May, f.SignIn = a.signedIn(r, name)
	links := a.gate.Links() != nil
	if f.User != "" && links && a.gate.Check(ctx, auth.Read|auth.List, name, false) == nil {
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
		if a.gate.Check(ctx, auth.Write, largo.Join(name, gate.NewName), false) == nil {
			m.Mkdir = MkdirPath
		}
	}
	if f.User != "" && links {
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

// signedIn is what a page says of its requester: who they are and what
// they may do on name, or, for an anonymous visitor of a server with
// users, the link that signs in and comes back to name's folder. A share
// link's visitor gets neither.
func (a *API) signedIn(r *http.Request, name string) (user string, may []string, signIn string) {
	p := principal(r)
	switch {
	case p.LinkID() != "":
	case p.UserName() != "":
		for _, perm := range []auth.Perm{auth.Read, auth.List, auth.Write, auth.Delete} {
			if a.gate.Check(r.Context(), perm, name, false) == nil {
				may = append(may, perm.String())
			}
		}
		return p.UserName(), may, ""
	case a.gate.Access().Policy().Users() > 0:
		back := "/"
		if name != "" {
			back += name + "/"
		}
		return "", nil, "/?login=" + url.QueryEscape(back)
	}
	return "", nil, ""
}

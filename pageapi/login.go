package pageapi

import (
	"net/http"
	"net/url"
	"strings"

	"largo"
	"largo/wire"
)

// Signing in from a browser uses the browser's own Basic auth: a page's
// "Sign in" link names the root with ?login=PATH. While that request
// carries no credential the answer is 401 with the challenge, so the
// browser asks for a user name and a password in its own dialog; once it
// carries a valid one (checked at the front door, package serve, like
// every credential), the answer is 303 to PATH.
//
// The challenge is made at "/" on purpose: a browser takes the folder of
// the URL that was challenged as the protection space, so it then sends
// the same credentials, unasked, with every request to the origin: the
// pages, their scripts' fetches, tus uploads under /_largo/uploads/. The
// page's script never sees the credentials and keeps nothing.

// Refusals of the sign-in route.
var (
	errSignIn      = wire.Refuse(http.StatusUnauthorized, "sign in with a user name and a password (or any name and a token)")
	errNoUsers     = wire.Refuse(http.StatusNotFound, "this server has no users: there is nothing to sign in to")
	errShareLogin  = wire.Refuse(http.StatusForbidden, "a share link does not sign in: open the server's own pages")
	errLoginTarget = wire.Refuse(http.StatusBadRequest, "login: the page to return to must be a path on this server")
)

// Login answers a GET or HEAD of a folder with ?login=PATH (or of one its
// visitor may not see yet), which the file tree hands over
// (serve.Config.Page): 401 with the challenge until the request carries a
// user's credential, then 303 to PATH ("" means the folder itself).
func (a *API) Login(w http.ResponseWriter, r *http.Request) error {
	target, err := loginTarget(r.URL.Query().Get("login"), r.URL.Path)
	if err != nil {
		return err
	}
	p := principal(r)
	switch {
	case p.LinkID() != "":
		return errShareLogin
	case a.gate.Access().Policy().Users() == 0:
		return errNoUsers
	case p.UserName() == "":
		return errSignIn
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Location", target)
	w.WriteHeader(http.StatusSeeOther)
	return nil
}

// loginTarget returns where a sign-in returns to: the path value names
// (self when it is empty), as an escaped absolute path of this server. A
// value that is not such a path (a URL with a scheme or a host, "//host",
// "/\host", a relative or unparsable path) is refused, so the route can
// never send a browser elsewhere.
func loginTarget(value, self string) (string, error) {
	if value == "" {
		value = self
	}
	if !strings.HasPrefix(value, "/") {
		return "", errLoginTarget
	}
	name, err := largo.ParseName(value)
	if err != nil {
		return "", errLoginTarget
	}
	p := "/" + name
	if name != "" && strings.HasSuffix(value, "/") {
		p += "/"
	}
	// From a name, which has no empty element, the path never starts
	// with "//": it cannot be read as a host.
	return (&url.URL{Path: p}).EscapedPath(), nil
}

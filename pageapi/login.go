package pageapi

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"largo"
	"largo/auth"
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

// Signing out: the browser keeps a Basic credential until it closes, and
// no header tells it to forget one; but it forgets the credential it sent
// when the answer to it is 401, and then asks for another only when the
// answer offers a scheme it can answer itself. The "Sign out" link of a
// page names the root with ?logout=PATH; while the request carries the
// browser's credential, the answer is 401 with a Bearer challenge (which
// no browser answers with a dialog) and a page that leads to PATH; once
// it carries none, 303 to PATH.

// Logout answers a GET or HEAD of a folder with ?logout=PATH (see above).
func (a *API) Logout(w http.ResponseWriter, r *http.Request) error {
	target, err := loginTarget(r.URL.Query().Get("logout"), r.URL.Path)
	if err != nil {
		return err
	}
	if principal(r).LinkID() != "" {
		return errShareLogin
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	if _, _, ok := r.BasicAuth(); !ok {
		hdr.Set("Location", target)
		w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	hdr.Set("WWW-Authenticate", `Bearer realm="`+auth.Realm+`"`)
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.WriteHeader(http.StatusUnauthorized)
	if r.Method == http.MethodHead {
		return nil
	}
	return signedOutPage.Execute(w, target)
}

// signedOutPage is what a browser shows once it forgot its credential,
// when no script of the page went on by itself.
var signedOutPage = template.Must(template.New("signed-out").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Signed out · largo</title>
</head>
<body>
<main>
<h1>Signed out</h1>
<p>This browser no longer sends your credential to this server. <a href="{{.}}">Go on</a></p>
</main>
</body>
</html>
`))

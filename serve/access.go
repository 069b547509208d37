package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/internal/reply"
	"largo/links"
	"largo/wire"
)

// Who a request comes from is found here, for every route, before a byte
// of a body is read: the request's Host (a loopback server answers only
// loopback names and Config.Hosts, which is what defeats DNS rebinding),
// its credential (Config.Access: 401 with a challenge when wrong, 429
// after too many failures; or the user a trusted proxy signed in, 403
// when that is no user of the policy: see auth.Proxies) or its share
// link, and a browser's origin for writes (cross-site writes are
// refused). The principal found travels in
// the request's context (package gate), and what it may do is decided at
// the store's door, by the gate, on every store call; a handler that must
// refuse before it reads a body asks the gate's Check, the same decision.

// Refusals of the front door.
var (
	errTooMany     = wire.Refuse(http.StatusTooManyRequests, "too many failed sign-ins: wait a second")
	errMisdirected = wire.Refuse(http.StatusMisdirectedRequest, "this server does not answer for that host name")
	errLinkPass    = wire.Refuse(http.StatusUnauthorized, "this share link needs its password: send it as the password of basic auth (any user name)")
	errBusySignIn  = wire.Refuse(http.StatusServiceUnavailable, "busy checking passwords: try again in a moment")
	errNotAUser    = wire.Refuse(http.StatusForbidden, auth.ErrNotAUser.Error())
)

// linkView is how a request through a share link sees the store: from
// the link's URL (Base, /_largo/s/TOKEN/), which stands for the link's
// path (Root), and nothing above it.
type linkView struct {
	Base string
	Root string
	Link *links.Link
	// Uploads: the request creates a tus upload through a drop box
	// (dropUploads), and goes to the tus endpoint.
	Uploads bool
}

type linkViewKey struct{}

// viewOf returns the link view of a request made through a share link,
// or nil.
func viewOf(r *http.Request) *linkView {
	v, _ := r.Context().Value(linkViewKey{}).(*linkView)
	return v
}

// principal returns the principal the guard found for r.
func principal(r *http.Request) gate.Principal {
	p, _ := gate.From(r.Context())
	return p
}

// guard checks what every request must pass, whatever its route: the
// host name and the credential. It returns the request carrying its
// principal.
func (h *Handler) guard(r *http.Request) (*http.Request, error) {
	if !h.hostAllowed(r.Host) {
		return r, errMisdirected
	}
	if strings.HasPrefix(r.URL.Path, links.URLPrefix) {
		return h.shareGuard(r)
	}
	user, err := h.cfg.Access.Identify(r)
	switch {
	case errors.Is(err, auth.ErrTooManyFailures):
		return r, errTooMany
	case errors.Is(err, auth.ErrBusy):
		return r, errBusySignIn
	case errors.Is(err, auth.ErrNotAUser):
		return r, errNotAUser
	case err != nil:
		return r, fmt.Errorf("%w: %w", err, largo.ErrUnauthorized)
	}
	return r.WithContext(gate.With(r.Context(), gate.User(user))), nil
}

// shareGuard checks a share link's token and turns the request into one
// for the name it reaches, made by the link's holder. Expired, revoked,
// changed and out-of-scope links are refused with their reason; a
// password link without its password is asked for it (401). Wrong
// passwords count against the client like bad credentials, under the
// same limiter, and against the link's own budget (linkPassword).
func (h *Handler) shareGuard(r *http.Request) (*http.Request, error) {
	ls := h.gate.Links()
	if ls == nil {
		return r, errNoShares
	}
	token, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, links.URLPrefix), "/")
	_, password, _ := r.BasicAuth()
	l, err := ls.Verify(r.Context(), token, "")
	if errors.Is(err, links.ErrPassword) && password != "" {
		l, err = h.linkPassword(r, ls, token, password)
	}
	switch {
	case errors.Is(err, auth.ErrTooManyFailures):
		return r, errTooMany
	case errors.Is(err, links.ErrPassword) && password == "":
		return r, errLinkPass
	case errors.Is(err, links.ErrPassword):
		return r, wire.Refuse(http.StatusForbidden, err.Error()) // counted by linkPassword
	case errors.Is(err, links.ErrNoKey):
		// No key signs any token yet: nothing to guess, nothing counted.
		return r, wire.Refuse(http.StatusForbidden, err.Error())
	case errors.Is(err, links.ErrInvalid) || errors.Is(err, links.ErrOld) || errors.Is(err, links.ErrRevoked) || errors.Is(err, links.ErrExpired):
		h.cfg.Access.Failed(r)
		return r, wire.Refuse(http.StatusForbidden, err.Error())
	case err != nil:
		return r, err
	}
	if rest == dropUploads && l.Kind == links.Drop && r.Method == http.MethodPost {
		return dropUpload(r, token, l)
	}
	name, err := largo.ParseName("/" + rest)
	if err != nil {
		return r, err
	}
	name, ok := l.Within(name)
	if !ok {
		return r, wire.Refuse(http.StatusForbidden, "outside what the share link reaches")
	}
	v := &linkView{Base: links.URLPrefix + token + "/", Root: l.Path, Link: l}
	if l.Kind == links.File {
		v.Root = largo.Parent(l.Path)
	}
	ctx := context.WithValue(gate.With(r.Context(), gate.LinkHolder(l.ID)), linkViewKey{}, v)
	r2 := r.WithContext(ctx)
	u := *r.URL
	u.Path = "/" + name
	if strings.HasSuffix(r.URL.Path, "/") && name != "" && l.Kind != links.File {
		u.Path += "/"
	}
	u.RawPath = ""
	r2.URL = &u
	return r2, nil
}

// linkPassword checks the password of the share link of token, whose
// token verified and whose record asks for one. The try is charged ahead
// against the budgets of the client and of the link, and given back
// unless the password was wrong: however many clients guess, a link's
// password is tried no faster than its budget of failures allows.
func (h *Handler) linkPassword(r *http.Request, ls *links.Links, token, password string) (*links.Link, error) {
	id, err := links.ID(token)
	if err != nil {
		return nil, err
	}
	right, err := h.cfg.Access.ChargeLink(r, id)
	if err != nil {
		return nil, err
	}
	l, err := ls.Verify(r.Context(), token, password)
	if !errors.Is(err, links.ErrPassword) {
		right()
	}
	return l, err
}

var errNoShares = wire.Refuse(http.StatusNotFound, links.ErrOff.Error())

// hostAllowed reports whether a Host header names this server: any name
// unless Config.Hosts is set, else a name in it.
func (h *Handler) hostAllowed(host string) bool { return hostIn(h.cfg.Hosts, host) }

// hostIn reports whether host (a Host header) is one of names; nil names
// allow any.
func hostIn(names []string, host string) bool {
	if names == nil {
		return true
	}
	if hn, _, err := net.SplitHostPort(host); err == nil {
		host = hn
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, ok := range names {
		if host == ok {
			return true
		}
	}
	return false
}

// OnlyHosts answers only requests whose Host is one of names (nil: any),
// and others 421, as the Handler does with Config.Hosts: for another
// listener of the same server (the admin one, whose pprof and metrics a
// page on a rebinding domain must not read).
func OnlyHosts(names []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostIn(names, r.Host) {
			code, reason := reply.Status(errMisdirected)
			reply.Text(w, code, reason)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHosts are the names a server on a loopback address answers by
// default.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// sameOrigin refuses a write a browser sends from another site
// (wire.SameOrigin), unless its origin is one of Config.CORSOrigins.
func (h *Handler) sameOrigin(r *http.Request) error {
	return wire.SameOrigin(r, h.cfg.CORSOrigins)
}

// cors answers for a listed origin: its requests may read the answer
// with credentials, and a preflight learns what it may send. It reports
// whether r was a preflight, now answered.
func (h *Handler) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || !wire.OriginListed(h.cfg.CORSOrigins, origin) {
		return false
	}
	hdr := w.Header()
	hdr.Add("Vary", "Origin")
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Set("Access-Control-Allow-Credentials", "true")
	hdr.Set("Access-Control-Expose-Headers", "ETag, Repr-Digest, Content-Length, Content-Range, Location")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	hdr.Set("Access-Control-Allow-Methods", writeMethods)
	hdr.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Range, If-Match, If-None-Match, If-Range, Content-Digest, Repr-Digest")
	hdr.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

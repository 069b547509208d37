package serve

import (
	"context"
	"errors"
	"iter"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"largo"
	"largo/auth"
	"largo/encode"
	"largo/ingest"
)

// Who may do what is decided here, for every route, before a byte of a
// body is read: the request's Host (a loopback server answers only
// loopback names and Config.Hosts, which is what defeats DNS rebinding),
// its credential (Config.Access: 401 with a challenge when missing or
// wrong, 429 after too many failures), a browser's origin for writes
// (cross-site writes are refused), and then, at each handler, the
// permission the request needs on its name (403 for a known user, 401 for
// an anonymous one, who may yet sign in). Listings and archives leave out
// what the requester may not read.

// Refusals of the access checks.
var (
	errForbidden   = ingest.Refuse(http.StatusForbidden, "forbidden: not allowed on this path")
	errTooMany     = ingest.Refuse(http.StatusTooManyRequests, "too many failed sign-ins: wait a second")
	errMisdirected = ingest.Refuse(http.StatusMisdirectedRequest, "this server does not answer for that host name")
	errCrossSite   = ingest.Refuse(http.StatusForbidden, "cross-site write refused: send writes from this server's own pages")
	errWriteOnly   = ingest.Refuse(http.StatusForbidden, "forbidden: a drop-box link only uploads new files into its folder")
)

// identity is who a request comes from: a user of the access policy (""
// for anonymous), or the holder of a share link.
type identity struct {
	user  string
	share *auth.Share
}

type identityKey struct{}

// who returns the identity the guard found for r.
func who(r *http.Request) identity {
	id, _ := r.Context().Value(identityKey{}).(identity)
	return id
}

// guard checks what every request must pass, whatever its route: the
// host name and the credential. It returns the request carrying its
// identity.
func (h *Handler) guard(r *http.Request) (*http.Request, error) {
	if !h.hostAllowed(r.Host) {
		return r, errMisdirected
	}
	if strings.HasPrefix(r.URL.Path, auth.SharePrefix) {
		return h.shareGuard(r)
	}
	if h.cfg.Access == nil {
		return r, nil
	}
	user, err := h.cfg.Access.Identify(r)
	switch {
	case errors.Is(err, auth.ErrTooManyFailures):
		return r, errTooMany
	case err != nil:
		return r, errUnauthorized
	case user == "":
		return r, nil // anonymous: the zero identity, no copy of the request
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, identity{user: user})), nil
}

// shareGuard checks a share link's token and turns the request into one
// for the name it reaches, made with the link's identity. Expired,
// changed and out-of-scope links are refused with their reason; a
// password link without its password is asked for it (401). Failures
// count against the client like bad credentials.
func (h *Handler) shareGuard(r *http.Request) (*http.Request, error) {
	if h.cfg.ShareKey == nil {
		return r, errNoShares
	}
	token, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, auth.SharePrefix), "/")
	_, password, _ := r.BasicAuth()
	s, err := auth.VerifyShare(h.cfg.ShareKey, token, password, h.cfg.Now())
	switch {
	case errors.Is(err, auth.ErrSharePassword) && password == "":
		return r, errUnauthorized
	case err != nil:
		return r, ingest.Refuse(http.StatusForbidden, err.Error())
	}
	name, err := largo.ParseName("/" + rest)
	if err != nil {
		return r, err
	}
	name, ok := s.Within(name)
	if !ok {
		return r, ingest.Refuse(http.StatusForbidden, "outside what the share link reaches")
	}
	r2 := r.WithContext(context.WithValue(r.Context(), identityKey{}, identity{share: &s}))
	u := *r.URL
	u.Path = "/" + name
	if strings.HasSuffix(r.URL.Path, "/") && name != "" && !s.File {
		u.Path += "/"
	}
	u.RawPath = ""
	r2.URL = &u
	return r2, nil
}

var errNoShares = ingest.Refuse(http.StatusNotFound, "share links are off on this server")

// hostAllowed reports whether a Host header names this server: any name
// unless Config.Hosts is set, else a name in it.
func (h *Handler) hostAllowed(host string) bool {
	if h.cfg.Hosts == nil {
		return true
	}
	if hn, _, err := net.SplitHostPort(host); err == nil {
		host = hn
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, ok := range h.cfg.Hosts {
		if host == ok {
			return true
		}
	}
	return false
}

// LoopbackHosts are the names a server on a loopback address answers by
// default.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// may returns nil when r may do perm on name, else the refusal: 401 for an
// anonymous requester (who may sign in), 403 for a known one.
func (h *Handler) may(r *http.Request, name string, perm auth.Perm) error {
	id := who(r)
	if id.share != nil {
		return shareMay(id.share, name, perm)
	}
	if h.cfg.Access == nil {
		return nil
	}
	pol := h.cfg.Access.Policy()
	if pol.Allowed(id.user, name)&perm == perm && (perm&auth.Read == 0 || readsSource(pol, id.user, name)) {
		return nil
	}
	if id.user == "" {
		return errUnauthorized
	}
	return errForbidden
}

// readsSource reports whether user may read the file a name of a
// sidecar's form (NAME.gz, NAME.br, NAME.zst of a type the policy
// compresses) holds NAME's bytes of: a rule that hides NAME hides them
// under that name too, whether largo precompress wrote the file or not.
func readsSource(pol *auth.Policy, user, name string) bool {
	base, _, ok := encode.SidecarBase(name)
	if !ok || !encode.Compressible(contentType(largo.Info{Name: path.Base(base)})) {
		return true
	}
	return pol.Allowed(user, base)&auth.Read != 0
}

// mayBelow is may for a request that acts on name and everything below
// it at once (a recursive DELETE): a rule on a path below name that
// takes perm away from the requester refuses it.
func (h *Handler) mayBelow(r *http.Request, name string, perm auth.Perm) error {
	if err := h.may(r, name, perm); err != nil {
		return err
	}
	id := who(r)
	if id.share != nil || h.cfg.Access == nil || h.cfg.Access.Policy().AllowedBelow(id.user, name)&perm == perm {
		return nil
	}
	if id.user == "" {
		return errUnauthorized
	}
	return errForbidden
}

// shareMay is what a share link allows: a read link reads and lists its
// path and what is below; a write link (a drop box) creates files in its
// folder and nothing else.
func shareMay(s *auth.Share, name string, perm auth.Perm) error {
	if s.Write {
		if perm == auth.Write && name != s.Path && parent(name) == s.Path {
			return nil
		}
		return errWriteOnly
	}
	if perm&^(auth.Read|auth.List) == 0 && within(s.Path, name) {
		return nil
	}
	return errForbidden
}

// within reports whether name is dir or below it.
func within(dir, name string) bool {
	return dir == "" || name == dir || strings.HasPrefix(name, dir+"/")
}

// parent returns the folder of a name: "a/b" for "a/b/c", "" for "c".
func parent(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// createOnly is the condition a write must carry: a drop-box link never
// replaces a file, whatever the request asked.
func createOnly(r *http.Request, cond largo.Condition) largo.Condition {
	if s := who(r).share; s != nil && s.Write {
		return largo.Condition{IfNoneMatch: true}
	}
	return cond
}

// sameOrigin refuses a write a browser sends from another site: its
// Origin names another origin that Config.CORSOrigins does not list, or
// Sec-Fetch-Site says cross-site. Tools that send neither (curl, the
// client) pass; so does a form of this server's own pages.
func (h *Handler) sameOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin != "" && h.corsAllowed(origin) {
		return nil
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return errCrossSite
	}
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return errCrossSite
	}
	return nil
}

// corsAllowed reports whether origin is listed in Config.CORSOrigins.
func (h *Handler) corsAllowed(origin string) bool {
	for _, o := range h.cfg.CORSOrigins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// cors answers for a listed origin: its requests may read the answer
// with credentials, and a preflight learns what it may send. It reports
// whether r was a preflight, now answered.
func (h *Handler) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || !h.corsAllowed(origin) {
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

// visible is the store as one requester may read it: listings and
// archives leave out what they may not read, and opening it fails as if
// it were not there.
type visible struct {
	largo.Store
	may func(name string, perm auth.Perm) bool
}

// readable returns the store as r's requester sees it.
func (h *Handler) readable(r *http.Request) largo.Store {
	id := who(r)
	if id.share == nil && (h.cfg.Access == nil || h.cfg.Access.Policy().ReadsAll(id.user)) {
		return h.cfg.Store
	}
	return visible{Store: h.cfg.Store, may: func(name string, perm auth.Perm) bool { return h.may(r, name, perm) == nil }}
}

func (v visible) seen(in largo.Info, name string) bool {
	if in.IsDir {
		return v.may(name, auth.List) || v.may(name, auth.Read)
	}
	return v.may(name, auth.Read)
}

// List yields the entries of name that may be read, or none when name
// itself may not be listed: a folder read but not listed is in an
// archive, empty.
func (v visible) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		if !v.may(name, auth.List) {
			return
		}
		for in, err := range v.Store.List(ctx, name) {
			if err == nil && !v.seen(in, largo.Join(name, in.Name)) {
				continue
			}
			if !yield(in, err) {
				return
			}
		}
	}
}

func (v visible) Open(ctx context.Context, name string) (largo.File, error) {
	if !v.may(name, auth.Read) {
		return nil, largo.ErrNotFound
	}
	return v.Store.Open(ctx, name)
}

package wire

import (
	"net/http"
	"net/url"
	"strings"
)

// ErrCrossSite refuses a write that a browser sends from another site.
var ErrCrossSite = Refuse(http.StatusForbidden, "cross-site write refused: send writes from this server's own pages")

// SameOrigin refuses, with ErrCrossSite, a request a browser sends from
// another site: its Origin names an origin that is neither the request's
// own host nor one of origins (the origins whose pages may write with
// their credentials, CORS), or its Sec-Fetch-Site says it comes from
// another site. Tools that send neither header (curl, largo's client)
// pass; so does a form of the server's own pages.
func SameOrigin(r *http.Request, origins []string) error {
	origin := r.Header.Get("Origin")
	if origin != "" && OriginListed(origins, origin) {
		return nil
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return ErrCrossSite
	}
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return ErrCrossSite
	}
	return nil
}

// OriginListed reports whether origin (scheme://host[:port], as an Origin
// header names it) is one of origins, in any case.
func OriginListed(origins []string, origin string) bool {
	for _, o := range origins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

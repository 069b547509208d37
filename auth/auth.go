// Package auth decides who a request comes from and what they may do:
// the users of an access policy (Policy: an access file, or what the
// one-user flags --token and --upload-open stand for), who sign in with a
// password (argon2id or bcrypt hashes) or a token; rules that grant read,
// list, write and delete by the longest path prefix (Rules); the share
// key an access file names (Policy.ShareKey; share links themselves are
// package links'); and, at run time, Access, which identifies requests,
// caches verified sign-ins and rate-limits failures per client, per user
// and per share link (failures.go).
//
// Secrets are compared in constant time or by their SHA-256, so not even
// a token's length leaks through timing, and no error names one. The
// package reads only headers: a caller checks a request before it touches
// the body, so a refused client never sends it.
package auth

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
)

// Realm is the protection space named in challenges.
const Realm = "largo"

// Challenge sets the WWW-Authenticate header of a 401 answer to r. A
// request that carried a bearer token learns only that the token was
// refused (RFC 6750's invalid_token): a script in a browser sends one, and
// a Basic challenge would make the browser open its password dialog over
// the page. Any other request gets both schemes, so that a browser offers
// its dialog and an API client learns it may send a bearer token.
func Challenge(h http.Header, r *http.Request) {
	if scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Bearer") {
		h.Set("WWW-Authenticate", `Bearer realm="`+Realm+`", error="invalid_token"`)
		return
	}
	h.Set("WWW-Authenticate", `Bearer realm="`+Realm+`"`)
	h.Add("WWW-Authenticate", `Basic realm="`+Realm+`", charset="UTF-8"`)
}

// Generate returns a new random token: 32 bytes from crypto/rand, in URL-safe
// base64, so it can be typed into a shell or a URL unescaped.
func Generate() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

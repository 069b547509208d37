// Package auth decides whether a request may write. A write carries the
// server's token either as a bearer token (Authorization: Bearer TOKEN) or
// as the password of basic auth (any user name), which is what browsers
// and tools such as curl -u send. Tokens are compared in constant time: the
// comparison is of their SHA-256 sums, so not even the token's length
// leaks through timing.
//
// The package reads only headers: a caller checks a request before it
// touches the body, so a refused client never sends it.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// Realm is the protection space named in challenges.
const Realm = "largo"

// Token checks requests against one secret token. The zero value accepts
// no request. A Token is safe for concurrent use.
type Token struct {
	sum [32]byte
	set bool
}

// NewToken returns a Token that accepts requests carrying token. An empty
// token accepts nothing.
func NewToken(token string) *Token {
	if token == "" {
		return &Token{}
	}
	return &Token{sum: sha256.Sum256([]byte(token)), set: true}
}

// Allow reports whether r carries the token.
func (t *Token) Allow(r *http.Request) bool {
	if t == nil || !t.set {
		return false
	}
	got, ok := Credential(r)
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1
}

// Credential returns the secret a request carries: a bearer token, or the
// password of basic auth.
func Credential(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if scheme, rest, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		tok := strings.TrimSpace(rest)
		return tok, tok != ""
	}
	if _, pass, ok := r.BasicAuth(); ok {
		return pass, pass != ""
	}
	return "", false
}

// Challenge sets the WWW-Authenticate header of a 401 answer: both schemes,
// so that a browser offers its password dialog and an API client learns it
// may send a bearer token.
func Challenge(h http.Header) {
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

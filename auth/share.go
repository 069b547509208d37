package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
)

// A share link is a bearer capability to one scope (a file, a folder
// and what is below it, or a drop box), granted by its maker. Its token
// holds only the link's ID and an HMAC-SHA256 of it under the share key;
// everything else (the scope, the maker, the expiry, the password) is the
// link's record in the store's state area (package gate), which every
// instance serving the store reads, so that a link can be listed,
// revoked and extended on its own. A link's password is kept in its
// record as an HMAC under the same key (PasswordMAC), so that the record
// alone does not give it away, and checking it is as cheap as checking
// the link: what bounds guessing is the failed-sign-in limiter.
//
// A token is three dot-separated fields:
//
//	v2.ID.MAC
//
// ID is 16 random bytes, MAC the HMAC, both in unpadded URL-safe base64.
// The first format, v1 (a scope signed without a maker or a record), is
// refused with ErrShareOld: such a link could not answer to its maker.

// SharePrefix is where share links live: /_largo/s/TOKEN/ followed by the
// shared name, or by a name below a shared folder.
const SharePrefix = "/_largo/s/"

// MinLinkPassword is the fewest characters a share link's password may
// have, wherever the link is made.
const MinLinkPassword = 8

// Errors of share links, each answered 403 with its text (a missing
// password 401).
var (
	ErrShareInvalid  = errors.New("invalid share link")
	ErrShareExpired  = errors.New("share link expired")
	ErrShareRevoked  = errors.New("share link revoked")
	ErrSharePassword = errors.New("share link needs its password")
	ErrShareOld      = errors.New("share link of a format this server no longer accepts (made before links answered to their maker): ask for a new one")
)

// NewLinkID returns a new random link ID.
func NewLinkID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SignLink returns the token of the link id under key.
func SignLink(key []byte, id string) string {
	head := "v2." + id
	return head + "." + base64.RawURLEncoding.EncodeToString(mac(key, head))
}

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// PasswordMAC returns what a link's record keeps of its password: an
// HMAC of the link's ID and the password under key, in hex.
func PasswordMAC(key []byte, id, password string) string {
	return hex.EncodeToString(mac(key, "password\x00"+id+"\x00"+password))
}

// CheckPassword reports, in constant time, whether password is the one
// whose PasswordMAC is want.
func CheckPassword(key []byte, id, password, want string) bool {
	return hmac.Equal([]byte(PasswordMAC(key, id, password)), []byte(want))
}

// LinkID returns the ID a token names, without checking its MAC:
// ErrShareInvalid for what has not the form of a token, ErrShareOld for
// a v1 token.
func LinkID(token string) (string, error) {
	fields := strings.Split(token, ".")
	switch {
	case len(fields) == 5 && fields[0] == "v1":
		return "", ErrShareOld
	case len(fields) != 3 || fields[0] != "v2":
		return "", ErrShareInvalid
	}
	id, err := base64.RawURLEncoding.DecodeString(fields[1])
	if err != nil || len(id) != 16 {
		return "", ErrShareInvalid
	}
	return fields[1], nil
}

// VerifyLink checks a token's MAC under key, in constant time, and
// returns the link's ID.
func VerifyLink(key []byte, token string) (string, error) {
	id, err := LinkID(token)
	if err != nil {
		return "", err
	}
	got, err := base64.RawURLEncoding.DecodeString(token[strings.LastIndexByte(token, '.')+1:])
	if err != nil || !hmac.Equal(got, mac(key, "v2."+id)) {
		return "", ErrShareInvalid
	}
	return id, nil
}

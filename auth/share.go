package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"largo"
)

// A share link grants one permission on one path (a file, or a folder and
// everything below it) until it expires, to whoever holds it, with no
// state on the server: the link carries its scope and an HMAC-SHA256 of
// it under the share key. Rotating the key revokes every link. A link
// made with a password also needs the password (as the password of basic
// auth, any user name): its HMAC covers a second HMAC of the password, so
// the password is never in the link, and checking it is as cheap as
// checking the link.
//
// A link's token is five dot-separated fields:
//
//	v1.SCOPE.EXPIRY.PATH.MAC
//
// SCOPE is "f" (read a file), "r" (read and list a folder and what is
// below it) or "w" (a drop box: create files in the folder, never read or
// replace), followed by "p" when a password is needed; EXPIRY is a Unix time; PATH is the
// store name in unpadded URL-safe base64; MAC the HMAC, likewise.

// SharePrefix is where share links live: /_largo/s/TOKEN/ followed by the
// shared name, or by a name below a shared folder.
const SharePrefix = "/_largo/s/"

// Share is a verified share link.
type Share struct {
	// Path is the shared name: a file, or a folder ("" for the root).
	Path string
	// Write is a drop box; otherwise the link reads.
	Write bool
	// File is a link to one file; otherwise Path is a folder.
	File bool
	// Password reports that the link needs a password.
	Password bool
	// Expires is when the link stops working.
	Expires time.Time
}

// Errors of share links, each answered 403 with its text.
var (
	ErrShareInvalid  = errors.New("invalid share link")
	ErrShareExpired  = errors.New("share link expired")
	ErrSharePassword = errors.New("share link needs its password")
)

// SignShare returns the token of a share link for s under key, with the
// password (empty: none).
func SignShare(key []byte, s Share, password string) string {
	scope := "r"
	switch {
	case s.Write:
		scope = "w"
	case s.File:
		scope = "f"
	}
	if password != "" {
		scope += "p"
	}
	b64 := base64.RawURLEncoding
	head := "v1." + scope + "." + strconv.FormatInt(s.Expires.Unix(), 10) + "." + b64.EncodeToString([]byte(s.Path))
	return head + "." + b64.EncodeToString(shareMAC(key, head, password))
}

func shareMAC(key []byte, head, password string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(head))
	if password != "" {
		pw := hmac.New(sha256.New, key)
		pw.Write([]byte("password\x00" + password))
		m.Write([]byte("\x00" + hex.EncodeToString(pw.Sum(nil))))
	}
	return m.Sum(nil)
}

// VerifyShare checks a token under key at time now, with the password the
// request carried (empty: none), in constant time for the MAC.
func VerifyShare(key []byte, token, password string, now time.Time) (Share, error) {
	var s Share
	fields := strings.Split(token, ".")
	if len(fields) != 5 || fields[0] != "v1" {
		return s, ErrShareInvalid
	}
	scope := fields[1]
	switch strings.TrimSuffix(scope, "p") {
	case "r":
	case "f":
		s.File = true
	case "w":
		s.Write = true
	default:
		return s, ErrShareInvalid
	}
	s.Password = strings.HasSuffix(scope, "p")
	exp, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return s, ErrShareInvalid
	}
	s.Expires = time.Unix(exp, 0)
	b64 := base64.RawURLEncoding
	path, err := b64.DecodeString(fields[3])
	if err != nil {
		return s, ErrShareInvalid
	}
	mac, err := b64.DecodeString(fields[4])
	if err != nil {
		return s, ErrShareInvalid
	}
	head := strings.Join(fields[:4], ".")
	if !s.Password {
		password = ""
	} else if password == "" {
		return s, ErrSharePassword
	}
	if !hmac.Equal(mac, shareMAC(key, head, password)) {
		if s.Password {
			return s, fmt.Errorf("%w (or the link was changed)", ErrSharePassword)
		}
		return s, ErrShareInvalid
	}
	if name, err := largo.ParseName("/" + string(path)); err != nil || name != string(path) {
		return s, ErrShareInvalid
	}
	s.Path = string(path)
	if !now.Before(s.Expires) {
		return s, ErrShareExpired
	}
	return s, nil
}

// Within returns the store name a share link's request names: rest, the
// part of the URL path after the token (a name that passed
// largo.ParseName, so it cannot climb), below the shared folder; for a
// file, rest is empty or the file's own name (so that a download keeps
// it), and ok is false for anything else.
func (s Share) Within(rest string) (name string, ok bool) {
	switch {
	case s.File:
		return s.Path, rest == "" || rest == path.Base(s.Path)
	case rest == "":
		return s.Path, true
	case s.Path == "":
		return rest, true
	}
	return s.Path + "/" + rest, true
}

// URLPath returns the path of a share link with token to s, below
// SharePrefix: a folder's ends with a slash, a file's with its name.
func (s Share) URLPath(token string) string {
	if s.File {
		return SharePrefix + token + "/" + (&url.URL{Path: path.Base(s.Path)}).EscapedPath()
	}
	return SharePrefix + token + "/"
}

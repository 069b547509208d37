package auth

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"slices"
)

// S3 keys: a user of the access file may have keys for the S3 API, each
// an access key ID and its secret:
//
//	[[user]]
//	name = "alice"
//	s3_keys = [{ id = "LK7Q2M4VZC8XH3N5BWRT", secret = "..." }]   # from largo s3key
//
// AWS Signature Version 4 signs each request with an HMAC keyed by the
// secret itself, which the server must compute again: unlike a password,
// the secret cannot be kept as a hash. The access file is then a secret
// of its own, and a file that holds S3 keys is refused when others than
// its owner and group may read it (chmod o-rwx).

// s3Key is an S3 key's owner and secret.
type s3Key struct {
	user, secret string
}

// s3KeyEntry is an S3 key as the access file spells it.
type s3KeyEntry struct {
	ID     string `toml:"id"`
	Secret string `toml:"secret"`
}

// Bounds of the S3 keys.
const (
	minS3ID     = 16
	maxS3ID     = 128
	minS3Secret = 32
	maxS3Secret = 128
)

// addS3Keys adds user's S3 keys to p, checking each.
func (p *Policy) addS3Keys(where, user string, keys []s3KeyEntry) error {
	for i, k := range keys {
		if len(k.ID) < minS3ID || len(k.ID) > maxS3ID || !alnum(k.ID) {
			return fmt.Errorf("%s: s3 key %d: an id is %d to %d letters and digits", where, i+1, minS3ID, maxS3ID)
		}
		if len(k.Secret) < minS3Secret || len(k.Secret) > maxS3Secret || !printable(k.Secret) {
			return fmt.Errorf("%s: s3 key %s: a secret is %d to %d printable characters without spaces", where, k.ID, minS3Secret, maxS3Secret)
		}
		if _, dup := p.s3keys[k.ID]; dup {
			return fmt.Errorf("%s: s3 key %s: given twice", where, k.ID)
		}
		if p.s3keys == nil {
			p.s3keys = map[string]s3Key{}
		}
		p.s3keys[k.ID] = s3Key{user: user, secret: k.Secret}
	}
	return nil
}

func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// checkSecretFile refuses an access file that holds S3 secrets and that
// others than its owner and group may read or write.
func checkSecretFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("access file %s: %v", path, err)
	}
	if fi.Mode().Perm()&0o007 != 0 {
		return fmt.Errorf("access file %s: it holds S3 secret keys, and others may read it (mode %v): chmod o-rwx %s", path, fi.Mode().Perm(), path)
	}
	return nil
}

// S3Keys returns the IDs of user's S3 keys, sorted (never the secrets).
func (p *Policy) S3Keys(user string) []string {
	var ids []string
	for id, k := range p.s3keys {
		if k.user == user {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// S3Key returns the user whose S3 access key id is, and its secret, for
// a request from r's client: ErrTooManyFailures when the client has no
// failures left (a signature that did not match, an ID no user has),
// ErrBadCredential for an ID no user has, which counts as a failure.
// A signature that does not match is counted by Failed.
func (a *Access) S3Key(r *http.Request, id string) (user, secret string, err error) {
	client := clientAddr(r)
	if !a.charge(client, "", "") {
		return "", "", ErrTooManyFailures
	}
	k, ok := a.Policy().s3keys[id]
	if !ok {
		return "", "", ErrBadCredential // the charge stays: a failure
	}
	a.refund(client, "", "")
	return k.user, k.secret, nil
}

// NewS3Key returns a new S3 key: an access key ID of 20 upper-case
// letters and digits, beginning with LK, and a secret of 40 characters
// of base64's alphabet (240 random bits).
func NewS3Key() (id, secret string) {
	const idChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	const secretChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, 18+40)
	rand.Read(b)
	idb := []byte("LK")
	for _, c := range b[:18] {
		idb = append(idb, idChars[c&31])
	}
	sb := make([]byte, 40)
	for i, c := range b[18:] {
		sb[i] = secretChars[c&63]
	}
	return string(idb), string(sb)
}

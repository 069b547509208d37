package links

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"largo"
)

// A token is three dot-separated fields:
//
//	v2.ID.MAC
//
// ID is 16 random bytes, MAC the HMAC-SHA256 of "v2.ID" under the share
// key, both in unpadded URL-safe base64. The first format, v1 (a scope
// signed without a maker or a record), is refused with ErrOld: such a
// link could not answer to its maker.

// KeyName is the state key of the share key a store keeps.
const KeyName = "share.key"

// MinKey is the fewest bytes a share key has.
const MinKey = 32

// idBytes is the length of a link's ID, before its encoding.
const idBytes = 16

// ErrDamagedKey: the state area holds a share key too short to be one.
// It is never replaced by a new one, which would revoke every link: the
// operator restores it, or removes it.
var ErrDamagedKey = errors.New("the share key is damaged")

// ErrNoKey: the state area holds no share key yet, so no token can be
// good (no link was made); one made beside is found within CacheTTL.
var ErrNoKey = fmt.Errorf("%w: no share link was made on this server yet", ErrInvalid)

// newID returns a new random link ID.
func newID() string {
	var b [idBytes]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// sign returns the token of the link id under key.
func sign(key []byte, id string) string {
	head := "v2." + id
	return head + "." + base64.RawURLEncoding.EncodeToString(mac(key, head))
}

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// ID returns the ID a token names, without checking its MAC: ErrInvalid
// for what has not the form of a token, ErrOld for a v1 token.
func ID(token string) (string, error) {
	fields := strings.Split(token, ".")
	switch {
	case len(fields) == 5 && fields[0] == "v1":
		return "", ErrOld
	case len(fields) != 3 || fields[0] != "v2" || !validID(fields[1]):
		return "", ErrInvalid
	}
	return fields[1], nil
}

// signedBy reports, in constant time, whether token, naming id, carries
// the MAC of id under key.
func signedBy(key []byte, token, id string) bool {
	got, err := base64.RawURLEncoding.DecodeString(token[strings.LastIndexByte(token, '.')+1:])
	return err == nil && hmac.Equal(got, mac(key, "v2."+id))
}

// passwordMAC returns what a link's record keeps of its password: an
// HMAC of the link's ID and the password under key, in hex.
func passwordMAC(key []byte, id, password string) string {
	return hex.EncodeToString(mac(key, "password\x00"+id+"\x00"+password))
}

// checkPassword reports, in constant time, whether password is the one
// whose passwordMAC is want.
func checkPassword(key []byte, id, password, want string) bool {
	return hmac.Equal([]byte(passwordMAC(key, id, password)), []byte(want))
}

// Load reads the share key the state area holds, if any, so that a
// damaged one is reported when a server starts rather than at its first
// link. No key is no error: the first link makes one.
func (ls *Links) Load(ctx context.Context) error {
	if ls == nil {
		return nil
	}
	_, err := ls.shareKey(ctx, readKey)
	if errors.Is(err, ErrNoKey) {
		return nil
	}
	return err
}

// keyNeed is why the share key is asked for.
type keyNeed int

const (
	// checkKey: to check a token anyone may send. Without a key, the
	// state area is asked again only once CacheTTL has passed since it
	// was last found without one.
	checkKey keyNeed = iota
	// readKey: to start, or to sign a link that has a record. The state
	// area is asked now.
	readKey
	// makeKey: to make a link. Where there is none, a key is made.
	makeKey
)

// shareKey returns the share key: Config.Key, or the state area's, kept
// once found; ErrNoKey without one (see keyNeed).
func (ls *Links) shareKey(ctx context.Context, need keyNeed) ([]byte, error) {
	if ls.cfg.Key != nil {
		return ls.cfg.Key, nil
	}
	ls.keyMu.Lock()
	defer ls.keyMu.Unlock()
	if ls.key != nil {
		return ls.key, nil
	}
	now := ls.cfg.Now()
	if need == checkKey && !ls.noKeySince.IsZero() && now.Sub(ls.noKeySince) < CacheTTL && !now.Before(ls.noKeySince) {
		return nil, ErrNoKey
	}
	k, err := ls.cfg.State.Get(ctx, KeyName)
	if errors.Is(err, largo.ErrNotFound) && need == makeKey {
		k, err = ls.newKey(ctx)
	}
	switch {
	case errors.Is(err, largo.ErrNotFound):
		if need == checkKey {
			ls.noKeySince = now
		}
		return nil, ErrNoKey
	case err != nil:
		return nil, fmt.Errorf("the share key: %w", err)
	case len(k) < MinKey:
		return nil, fmt.Errorf("%w: the share key in the store's state area (%s/%s) is %d bytes, not %d or more. Restore it, or remove it to make a new one (which revokes every share link)", ErrDamagedKey, largo.StateDir, KeyName, len(k), MinKey)
	}
	ls.key = k
	return k, nil
}

// newKey writes a new share key where none is, and returns the key the
// state area then holds: its own, or the one another maker wrote first.
func (ls *Links) newKey(ctx context.Context) ([]byte, error) {
	k := make([]byte, MinKey)
	rand.Read(k)
	cr, ok := ls.cfg.State.(largo.StateCreator)
	if !ok {
		return k, ls.cfg.State.Put(ctx, KeyName, k)
	}
	err := cr.Create(ctx, KeyName, k)
	if errors.Is(err, largo.ErrExist) {
		return ls.cfg.State.Get(ctx, KeyName)
	}
	return k, err
}

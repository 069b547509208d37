package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Password hashes are argon2id, in the PHC string form
// ($argon2id$v=19$m=MEMORY,t=TIME,p=THREADS$SALT$HASH, unpadded base64),
// or bcrypt ($2a$, $2b$, $2y$), the two forms other tools write too.

// argon2id parameters of the hashes HashPassword makes: RFC 9106's second
// recommended choice (64 MiB, 3 passes), with 4 lanes.
const (
	argonTime    = 3
	argonMemory  = 64 << 10 // KiB
	argonThreads = 4
	argonKeyLen  = 32
	argonSaltLen = 16
)

// HashPassword returns the argon2id hash of password, in PHC form.
func HashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// hash is a parsed password hash.
type hash struct {
	bcrypt []byte // the whole bcrypt hash, or nil
	// argon2id
	salt, key    []byte
	time, memory uint32
	threads      uint8
}

// parseHash reads a password hash, checking its form and its costs (a
// hash that would take gigabytes of memory to check is refused when the
// access file is read, not at the first sign-in).
func parseHash(s string) (hash, error) {
	if strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$") {
		cost, err := bcrypt.Cost([]byte(s))
		if err != nil {
			return hash{}, fmt.Errorf("bcrypt hash: %v", err)
		}
		if cost > 14 {
			return hash{}, fmt.Errorf("bcrypt cost %d: at most 14", cost)
		}
		return hash{bcrypt: []byte(s)}, nil
	}
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return hash{}, errors.New("not an argon2id or bcrypt hash (make one with largo passwd)")
	}
	var h hash
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return hash{}, fmt.Errorf("argon2id hash: version %q", parts[2])
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &h.memory, &h.time, &h.threads); err != nil {
		return hash{}, fmt.Errorf("argon2id hash: parameters %q", parts[3])
	}
	if h.memory < 8 || h.memory > 1<<20 || h.time < 1 || h.time > 16 || h.threads < 1 {
		return hash{}, fmt.Errorf("argon2id hash: parameters %q out of bounds (memory up to 1 GiB, up to 16 passes)", parts[3])
	}
	var err error
	b64 := base64.RawStdEncoding
	if h.salt, err = b64.DecodeString(parts[4]); err != nil || len(h.salt) < 8 {
		return hash{}, errors.New("argon2id hash: bad salt")
	}
	if h.key, err = b64.DecodeString(parts[5]); err != nil || len(h.key) < 16 {
		return hash{}, errors.New("argon2id hash: bad hash")
	}
	return h, nil
}

// matches reports whether password has hash h. It costs what the hash's
// parameters say: tens of milliseconds, which is why verified credentials
// are cached (see cache.go).
func (h hash) matches(password string) bool {
	if h.bcrypt != nil {
		return bcrypt.CompareHashAndPassword(h.bcrypt, []byte(password)) == nil
	}
	key := argon2.IDKey([]byte(password), h.salt, h.time, h.memory, h.threads, uint32(len(h.key)))
	return subtle.ConstantTimeCompare(key, h.key) == 1
}

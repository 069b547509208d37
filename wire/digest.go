package wire

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ErrBadDigest is a Content-Digest or Repr-Digest field that cannot be
// read.
var ErrBadDigest = errors.New("invalid digest field")

// ParseDigest reads a digest field of RFC 9530 (Content-Digest,
// Repr-Digest), a structured-field dictionary such as
// `sha-256=:BASE64:, sha-512=:BASE64:`, and returns its sha-256 value, or
// nil when the field names no sha-256. Other algorithms are ignored, as the
// RFC allows; a field that breaks the syntax is an error wrapping
// ErrBadDigest.
func ParseDigest(v string) ([]byte, error) {
	var sum []byte
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%w: empty member", ErrBadDigest)
		}
		item, _, _ = strings.Cut(item, ";") // parameters say nothing here
		key, val, ok := strings.Cut(item, "=")
		if !ok || key == "" || strings.ToLower(key) != key || strings.ContainsAny(key, " \t") {
			return nil, fmt.Errorf("%w: %q", ErrBadDigest, item)
		}
		if key != "sha-256" {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
			return nil, fmt.Errorf("%w: sha-256 is not a byte sequence (:base64:)", ErrBadDigest)
		}
		b, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%w: sha-256 is not 32 bytes of base64", ErrBadDigest)
		}
		sum = b
	}
	return sum, nil
}

// FormatDigest writes a SHA-256 as a digest field value.
func FormatDigest(sum []byte) string {
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum) + ":"
}

// WantsSHA256 reads a Want-Repr-Digest or Want-Content-Digest field (RFC
// 9530, section 4: a dictionary of algorithms, each with a preference
// from 1 to 10, or 0 for not acceptable) and reports whether a sha-256
// digest may be sent: unless the field gives sha-256 the preference 0. A
// field that names other algorithms only still lets it be sent (the
// sender may send one it supports), and one that cannot be read says
// nothing.
func WantsSHA256(v string) bool {
	for item := range strings.SplitSeq(v, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || strings.TrimSpace(key) != "sha-256" {
			continue
		}
		val, _, _ = strings.Cut(val, ";")
		if strings.TrimSpace(val) == "0" {
			return false
		}
	}
	return true
}

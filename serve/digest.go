package serve

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// errBadDigest is a Content-Digest or Repr-Digest header that cannot be
// read.
var errBadDigest = errors.New("invalid digest header")

// wantDigest returns the SHA-256 a write must have according to its
// Content-Digest and Repr-Digest headers (RFC 9530), or nil when neither
// names sha-256. Largo stores the bytes it receives as they are, so both
// headers describe the same bytes; when both are sent they must agree.
// Other algorithms are ignored, as RFC 9530 allows.
func wantDigest(h http.Header) ([]byte, error) {
	var want []byte
	for _, field := range []string{"Content-Digest", "Repr-Digest"} {
		v := strings.Join(h.Values(field), ",")
		if v == "" {
			continue
		}
		sum, err := parseDigest(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if sum == nil {
			continue
		}
		if want != nil && string(want) != string(sum) {
			return nil, fmt.Errorf("Content-Digest and Repr-Digest disagree: %w", errBadDigest)
		}
		want = sum
	}
	return want, nil
}

// parseDigest reads a digest field, a structured-field dictionary such as
// `sha-256=:BASE64:, sha-512=:BASE64:`, and returns the sha-256 value, or
// nil when the field has none.
func parseDigest(v string) ([]byte, error) {
	var sum []byte
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%w: empty member", errBadDigest)
		}
		item, _, _ = strings.Cut(item, ";") // parameters say nothing here
		key, val, ok := strings.Cut(item, "=")
		if !ok || key == "" || strings.ToLower(key) != key || strings.ContainsAny(key, " \t") {
			return nil, fmt.Errorf("%w: %q", errBadDigest, item)
		}
		if key != "sha-256" {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
			return nil, fmt.Errorf("%w: sha-256 is not a byte sequence (:base64:)", errBadDigest)
		}
		b, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%w: sha-256 is not 32 bytes of base64", errBadDigest)
		}
		sum = b
	}
	return sum, nil
}

// formatDigest writes a SHA-256 as a digest field value.
func formatDigest(sum [32]byte) string {
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

package serve

import (
	"fmt"
	"net/http"
	"strings"

	"largo"
)

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
		sum, err := largo.ParseDigest(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if sum == nil {
			continue
		}
		if want != nil && string(want) != string(sum) {
			return nil, fmt.Errorf("Content-Digest and Repr-Digest disagree: %w", largo.ErrBadDigest)
		}
		want = sum
	}
	return want, nil
}

package client

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"
)

// digest is one digest of RFC 9530's Repr-Digest or Content-Digest.
type digest struct {
	alg string // "sha-256" or "sha-512"
	sum []byte
}

func (d digest) String() string { return d.alg + "=:" + base64.StdEncoding.EncodeToString(d.sum) + ":" }

func (d digest) hash() hash.Hash {
	if d.alg == "sha-512" {
		return sha512.New()
	}
	return sha256.New()
}

// parseDigest reads the strongest digest largo knows from a Repr-Digest or
// Content-Digest field value (a structured-field dictionary such as
// `sha-256=:BASE64:, sha-512=:BASE64:`); ok is false when it holds none.
func parseDigest(v string) (d digest, ok bool) {
	for item := range strings.SplitSeq(v, ",") {
		key, val, found := strings.Cut(strings.TrimSpace(item), "=")
		if !found {
			continue
		}
		val, _, _ = strings.Cut(val, ";") // parameters
		val = strings.TrimSpace(val)
		key = strings.ToLower(strings.TrimSpace(key))
		if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
			continue
		}
		sum, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
		if err != nil {
			continue
		}
		switch {
		case key == "sha-256" && len(sum) == sha256.Size:
			if d.alg != "sha-512" {
				d = digest{key, sum}
			}
		case key == "sha-512" && len(sum) == sha512.Size:
			d = digest{key, sum}
		}
	}
	return d, d.alg != ""
}

// digestHeader is the representation digest a response declares: its
// Repr-Digest, or the Content-Digest of a whole, unencoded 200 answer
// (where the two are the same thing). It is "" when there is none.
func digestHeader(resp *http.Response) string {
	if d, ok := parseDigest(resp.Header.Get("Repr-Digest")); ok {
		return d.String()
	}
	if resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Encoding") == "" {
		if d, ok := parseDigest(resp.Header.Get("Content-Digest")); ok {
			return d.String()
		}
	}
	return ""
}

// checkDigest compares sum with the digest want ("ALG=:BASE64:").
func checkDigest(want string, sum []byte) error {
	d, _ := parseDigest(want)
	if !bytes.Equal(d.sum, sum) {
		return fmt.Errorf("%w: the server's %s is %s, the file's is %s", ErrDigest, d.alg,
			base64.StdEncoding.EncodeToString(d.sum), base64.StdEncoding.EncodeToString(sum))
	}
	return nil
}

// hashFile hashes the first n bytes of path with the algorithm of want.
func hashFile(path string, n int64, want string) (hash.Hash, error) {
	d, _ := parseDigest(want)
	h := d.hash()
	f, err := os.Open(path)
	if err != nil {
		return nil, localError{err}
	}
	defer f.Close()
	if _, err := io.CopyN(h, f, n); err != nil {
		return nil, localError{fmt.Errorf("reading %s: %w", path, err)}
	}
	return h, nil
}

package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"testing"
)

func TestParseDigest(t *testing.T) {
	sum := sha256.Sum256([]byte("x"))
	b64 := base64.StdEncoding.EncodeToString(sum[:])
	for _, tt := range []struct {
		in   string
		want []byte
		ok   bool
	}{
		{"sha-256=:" + b64 + ":", sum[:], true},
		{"sha-512=:AAAA:, sha-256=:" + b64 + ":", sum[:], true},
		{"sha-256=:" + b64 + ":;param=1", sum[:], true},
		{"sha-512=:AAAA:", nil, true},
		{"sha-256=" + b64, nil, false},
		{"sha-256=:AAAA:", nil, false},
		{"sha-256=:!!:", nil, false},
		{"SHA-256=:" + b64 + ":", nil, false},
		{"sha-256", nil, false},
		{",", nil, false},
	} {
		got, err := ParseDigest(tt.in)
		if (err == nil) != tt.ok || !bytes.Equal(got, tt.want) {
			t.Errorf("ParseDigest(%q) = %x, %v", tt.in, got, err)
		}
	}
}

func FuzzParseDigest(f *testing.F) {
	f.Add("sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:")
	f.Add("sha-512=:x:, sha-256=:y:")
	f.Fuzz(func(t *testing.T, s string) {
		sum, err := ParseDigest(s)
		if err == nil && sum != nil && len(sum) != 32 {
			t.Fatalf("%q: %d bytes", s, len(sum))
		}
	})
}

func TestWantsSHA256(t *testing.T) {
	for v, want := range map[string]bool{
		"":                      true,
		"sha-256=10":            true,
		"sha-256=1, sha-512=10": true,
		"sha-512=3":             true,
		"sha-256=0":             false,
		"sha-512=10, sha-256=0": false,
		" sha-256 = 0 ;x":       false,
		"sha-256=0.5":           true,
		"not a dictionary":      true,
	} {
		if got := WantsSHA256(v); got != want {
			t.Errorf("%q: %v; want %v", v, got, want)
		}
	}
}

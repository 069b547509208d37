package hooks

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestSignVector: the signature of the Standard Webhooks specification's
// published example (a "whsec_" secret, its id, time and body), so that
// receivers may check largo's requests with that scheme's libraries.
func TestSignVector(t *testing.T) {
	got := Sign([]byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

// TestVerify: a request verifies with its own id, time and body under
// the secret, within the tolerance; one sent too long ago (or too far
// ahead), replayed under another time, changed, or signed with another
// secret does not.
func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"e1","type":"committed"}`)
	signed := func(at time.Time) http.Header {
		h := http.Header{}
		signHeaders(h, secret, "e1", at, body)
		return h
	}
	cases := []struct {
		name   string
		header http.Header
		body   []byte
		want   error
	}{
		{"fresh", signed(now), body, nil},
		{"a little late", signed(now.Add(-4 * time.Minute)), body, nil},
		{"a little early", signed(now.Add(4 * time.Minute)), body, nil},
		{"too old", signed(now.Add(-6 * time.Minute)), body, ErrStale},
		{"too far ahead", signed(now.Add(6 * time.Minute)), body, ErrStale},
		{"replayed with a new time", func() http.Header {
			h := signed(now.Add(-time.Hour)) // captured an hour ago
			h.Set(TimestampHeader, strconv.FormatInt(now.Unix(), 10))
			return h
		}(), body, ErrSignature},
		{"another id", func() http.Header {
			h := signed(now)
			h.Set(IDHeader, "e2")
			return h
		}(), body, ErrSignature},
		{"another body", signed(now), []byte(`{"id":"e1","type":"deleted"}`), ErrSignature},
		{"another secret", func() http.Header {
			h := http.Header{}
			signHeaders(h, []byte("another secret of some length"), "e1", now, body)
			return h
		}(), body, ErrSignature},
		{"rotated: one of two matches", func() http.Header {
			h := signed(now)
			h.Set(SignatureHeader, "v1,AAAA v1a,BBBB "+h.Get(SignatureHeader))
			return h
		}(), body, nil},
		{"a time that is no number", func() http.Header {
			h := signed(now)
			h.Set(TimestampHeader, "soon")
			return h
		}(), body, ErrStale},
		{"unsigned", func() http.Header {
			h := http.Header{}
			signHeaders(h, nil, "e1", now, body)
			return h
		}(), body, ErrUnsigned},
		{"legacy signature only", http.Header{LegacySignatureHeader: {SignLegacy(secret, body)}}, body, ErrUnsigned},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(secret, c.header, c.body, now, 0)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Verify: %v, want %v", err, c.want)
			}
		})
	}
	// A tolerance of its own.
	if err := Verify(secret, signed(now.Add(-time.Minute)), body, now, 30*time.Second); !errors.Is(err, ErrStale) {
		t.Errorf("a minute late with a tolerance of 30s: %v", err)
	}
	// The legacy field is still sent, and still the body's.
	if h := signed(now); !VerifyLegacy(secret, body, h.Get(LegacySignatureHeader)) {
		t.Errorf("legacy signature %q does not verify", h.Get(LegacySignatureHeader))
	}
}

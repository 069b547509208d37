package hooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The fields of the Standard Webhooks scheme (version 1.0.0), which every
// request largo sends carries when it is given a secret: the message's id
// (a notification's event id, the same on every attempt), the time of
// the attempt in Unix seconds, and the signature over both and the body.
const (
	IDHeader        = "Webhook-Id"
	TimestampHeader = "Webhook-Timestamp"
	SignatureHeader = "Webhook-Signature"
)

// LegacySignatureHeader carries the HMAC-SHA256 of the body alone
// (SignLegacy), as largo signed before it followed Standard Webhooks.
//
// Deprecated: it covers no time, so a request captured can be replayed
// as new; it is still sent for one release, for receivers that check it.
// Check SignatureHeader with Verify.
const LegacySignatureHeader = "Largo-Signature"

// DefaultTolerance is how far the time of a request may be from the
// receiver's clock, either way, for Verify given no tolerance.
const DefaultTolerance = 5 * time.Minute

// secretPrefix marks a secret written as Standard Webhooks presents them:
// the key is the base64 that follows it.
const secretPrefix = "whsec_"

// signingKey is the HMAC key of secret: the bytes base64 encodes after
// "whsec_", else the secret as it is.
func signingKey(secret []byte) []byte {
	if rest, ok := bytes.CutPrefix(secret, []byte(secretPrefix)); ok {
		if k, err := base64.StdEncoding.DecodeString(string(rest)); err == nil && len(k) > 0 {
			return k
		}
	}
	return secret
}

// Sign returns the value of SignatureHeader of a request with the id,
// timestamp (Unix seconds) and body given: "v1," and the base64 of the
// HMAC-SHA256, under secret, of the id, the timestamp and the body joined
// by full stops. A secret "whsec_BASE64" is the key BASE64 encodes, as
// Standard Webhooks' libraries read it.
func Sign(secret []byte, id string, timestamp int64, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(mac(signingKey(secret), id, timestamp, body))
}

// mac is the HMAC-SHA256 under key of "id.timestamp.body".
func mac(key []byte, id string, timestamp int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of Verify.
var (
	// ErrUnsigned is a request without the three fields of a signature.
	ErrUnsigned = errors.New("no webhook-id, webhook-timestamp and webhook-signature")
	// ErrStale is a request whose time is outside the tolerance: sent
	// long ago (replayed), or by a clock far off.
	ErrStale = errors.New("the request's time is outside the tolerance")
	// ErrSignature is a request none of whose signatures is the body's,
	// id's and time's under the secret.
	ErrSignature = errors.New("no signature matches")
)

// Verify checks a request largo sent, as its receiver got it: header
// holds its IDHeader, TimestampHeader and SignatureHeader, body its exact
// bytes. It fails (ErrUnsigned, ErrStale, ErrSignature) unless the time is
// within tolerance of now (zero means DefaultTolerance) and one of the
// space-separated "v1," signatures is the HMAC-SHA256 under secret of
// the id, the time and the body; signatures are compared in constant
// time. A receiver should also skip the ids it has handled (a duplicate
// is sent with its id unchanged).
func Verify(secret []byte, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts, sigs := header.Get(IDHeader), header.Get(TimestampHeader), header.Get(SignatureHeader)
	if id == "" || ts == "" || sigs == "" {
		return ErrUnsigned
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q is no number of seconds", ErrStale, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s from now, tolerance %s", ErrStale, d.Round(time.Second), tolerance)
	}
	want := mac(signingKey(secret), id, sec, body)
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue // another scheme's, or a later version's
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

// SignLegacy returns the value of LegacySignatureHeader for body:
// "sha256=" and the hex of its HMAC-SHA256 under secret (the secret as it
// is, whatever it begins with).
//
// Deprecated: it covers no time; use Sign.
func SignLegacy(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifyLegacy reports whether sig, a LegacySignatureHeader's value, is
// body's under secret, in constant time.
//
// Deprecated: a request captured passes it for ever; use Verify.
func VerifyLegacy(secret, body []byte, sig string) bool {
	return hmac.Equal([]byte(SignLegacy(secret, body)), []byte(strings.TrimSpace(sig)))
}

// signHeaders sets the Standard Webhooks fields of a request with id and
// body, sent at now, and with a secret its signatures: the Standard
// Webhooks one and the legacy one.
func signHeaders(h http.Header, secret []byte, id string, now time.Time, body []byte) {
	ts := now.Unix()
	h.Set(IDHeader, id)
	h.Set(TimestampHeader, strconv.FormatInt(ts, 10))
	if secret != nil {
		h.Set(SignatureHeader, Sign(secret, id, ts, body))
		h.Set(LegacySignatureHeader, SignLegacy(secret, body))
	}
}

package s3api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AWS Signature Version 4, as S3 checks it: in the Authorization header,
// or in the query string of a presigned URL. The signature covers a
// canonical form of the request (the method, the path, the query, the
// headers the client names as signed, and the payload's hash or how the
// payload is signed), keyed by a key derived from the secret, the day,
// the region and the service. The secret is the user's own (auth.Policy's
// S3 keys): an HMAC needs it, so it is kept as it is, never as a hash.

// The values of x-amz-content-sha256 that are no hash.
const (
	unsignedPayload        = "UNSIGNED-PAYLOAD"
	streamingSigned        = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingSignedTrailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsigned      = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	algorithm              = "AWS4-HMAC-SHA256"
	emptySHA256            = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	amzDateFormat          = "20060102T150405Z"
)

// Bounds of a signature's time.
const (
	// maxSkew is how far a request's time may be from the server's.
	maxSkew = 15 * time.Minute
	// maxExpires is the longest a presigned URL may last: a week.
	maxExpires = 7 * 24 * time.Hour
)

// signature is a request's signature as it was checked: what the chunks
// of a streaming body are signed with and chained to.
type signature struct {
	key     []byte // the signing key of the day, region and service
	date    string // the request's time, as signed (20060102T150405Z)
	scope   string // day/region/s3/aws4_request
	seed    string // the request's own signature, in hex
	payload string // x-amz-content-sha256 as signed
}

// credential is the parsed Credential of a signature.
type credential struct {
	id, day, region, service string
}

// scope returns the credential's scope, the form the signature covers.
func (c credential) scope() string {
	return c.day + "/" + c.region + "/" + c.service + "/aws4_request"
}

// parseCredential reads ID/day/region/s3/aws4_request.
func parseCredential(v string) (credential, bool) {
	parts := strings.Split(v, "/")
	if len(parts) != 5 || parts[0] == "" || len(parts[1]) != 8 || parts[2] == "" || parts[3] != "s3" || parts[4] != "aws4_request" {
		return credential{}, false
	}
	return credential{id: parts[0], day: parts[1], region: parts[2], service: parts[3]}, true
}

// signed is what a request says of its signature, wherever it says it.
type signed struct {
	cred      credential
	headers   []string // the signed headers, lower case, as listed
	signature string   // hex
	date      string   // the request's time as signed
	t         time.Time
	expires   time.Duration // a presigned URL's lifetime; zero for a header
	payload   string        // the payload's hash, or how it is signed
}

// signedBy reads the signature of r: from the Authorization header, or
// from a presigned URL's query. ok is false for a request that carries
// none (anonymous).
func signedBy(r *http.Request) (s signed, ok bool, err error) {
	h := r.Header.Get("Authorization")
	q := r.URL.Query()
	switch {
	case h != "" && q.Has("X-Amz-Algorithm"):
		return s, true, errBadRequest
	case h != "":
		s, err = headerSignature(r, h)
		return s, true, err
	case q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Credential") || q.Has("X-Amz-Signature"):
		s, err = querySignature(q)
		return s, true, err
	case q.Has("AWSAccessKeyId") || q.Has("Signature"):
		return s, true, errSigV2
	}
	return s, false, nil
}

// headerSignature reads an Authorization header of AWS4-HMAC-SHA256.
func headerSignature(r *http.Request, h string) (signed, error) {
	var s signed
	alg, rest, _ := strings.Cut(h, " ")
	if alg != algorithm {
		if alg == "AWS" {
			return s, errSigV2
		}
		return s, errAuthHeader
	}
	var cred, heads, sig string
	for f := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			heads = v
		case "Signature":
			sig = v
		}
	}
	var ok bool
	if s.cred, ok = parseCredential(cred); !ok || !validSignature(sig) {
		return s, errAuthHeader
	}
	if s.headers, ok = parseSignedHeaders(heads); !ok {
		return s, errAuthHeader
	}
	s.signature = sig
	s.date = r.Header.Get("X-Amz-Date")
	if s.date != "" {
		t, err := time.Parse(amzDateFormat, s.date)
		if err != nil {
			return s, errNoDate
		}
		s.t = t
	} else {
		s.date = r.Header.Get("Date")
		t, err := http.ParseTime(s.date)
		if err != nil {
			return s, errNoDate
		}
		s.t = t
	}
	s.payload = r.Header.Get("X-Amz-Content-Sha256")
	if s.payload == "" {
		if r.ContentLength != 0 {
			return s, errNeedSHA
		}
		s.payload = emptySHA256
	}
	return s, nil
}

// querySignature reads the signature of a presigned URL.
func querySignature(q url.Values) (signed, error) {
	var s signed
	if q.Get("X-Amz-Algorithm") != algorithm {
		return s, errAuthQuery
	}
	var ok bool
	if s.cred, ok = parseCredential(q.Get("X-Amz-Credential")); !ok {
		return s, errAuthQuery
	}
	if s.headers, ok = parseSignedHeaders(q.Get("X-Amz-SignedHeaders")); !ok {
		return s, errAuthQuery
	}
	s.signature = q.Get("X-Amz-Signature")
	if !validSignature(s.signature) {
		return s, errAuthQuery
	}
	s.date = q.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, s.date)
	if err != nil {
		return s, errAuthQuery
	}
	s.t = t
	secs, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxExpires {
		return s, errAuthQuery
	}
	s.expires = time.Duration(secs) * time.Second
	s.payload = unsignedPayload
	if v := q.Get("X-Amz-Content-Sha256"); v != "" {
		s.payload = v
	}
	return s, nil
}

// parseSignedHeaders reads a SignedHeaders list: lower-case names in
// order, host among them.
func parseSignedHeaders(v string) ([]string, bool) {
	if v == "" {
		return nil, false
	}
	hs := strings.Split(v, ";")
	if !slices.IsSorted(hs) || !slices.Contains(hs, "host") {
		return nil, false
	}
	for _, h := range hs {
		if h == "" || h != strings.ToLower(h) {
			return nil, false
		}
	}
	return hs, true
}

// validSignature reports whether v is 64 hex digits.
func validSignature(v string) bool {
	if len(v) != 64 {
		return false
	}
	_, err := hex.DecodeString(v)
	return err == nil
}

// checkTime refuses a signature whose time is more than maxSkew from
// now, or a presigned URL that has expired.
func (s *signed) checkTime(now time.Time) error {
	if s.cred.day != s.t.Format("20060102") {
		return errSignature
	}
	if s.expires > 0 {
		switch {
		case now.Before(s.t.Add(-maxSkew)):
			return errSkewed
		case !now.Before(s.t.Add(s.expires)):
			return errExpired
		}
		return nil
	}
	if d := now.Sub(s.t); d > maxSkew || d < -maxSkew {
		return errSkewed
	}
	return nil
}

// verify checks s, the signature r carries, with the secret of its
// access key, and returns what its body's chunks are checked with.
func (s *signed) verify(r *http.Request, secret string) (*signature, error) {
	key := signingKey(secret, s.cred)
	scope := s.cred.scope()
	want := hex.EncodeToString(hmacSHA256(key, stringToSign(s.date, scope, canonicalRequest(r, s))))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(s.signature))) {
		return nil, errSignature
	}
	return &signature{key: key, date: s.date, scope: scope, seed: want, payload: s.payload}, nil
}

// signingKey derives the key of a day, region and service from a
// secret.
func signingKey(secret string, c credential) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), c.day)
	k = hmacSHA256(k, c.region)
	k = hmacSHA256(k, c.service)
	return hmacSHA256(k, "aws4_request")
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func sha256Hex(data string) string {
	sum := sha256.Sum256([]byte(data))
	return hex.EncodeToString(sum[:])
}

// stringToSign is what the signature of a request signs.
func stringToSign(date, scope, canonical string) string {
	return algorithm + "\n" + date + "\n" + scope + "\n" + sha256Hex(canonical)
}

// canonicalRequest is the canonical form of r that s signs.
func canonicalRequest(r *http.Request, s *signed) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(uriEncode(r.URL.Path, true))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery, s.expires > 0))
	b.WriteByte('\n')
	for _, h := range s.headers {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(canonicalHeader(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(s.headers, ";"))
	b.WriteByte('\n')
	b.WriteString(s.payload)
	return b.String()
}

// canonicalHeader is the value of the header h as signed: its values
// trimmed, runs of spaces made one, joined by commas. Go takes Host and
// Transfer-Encoding out of the header map; they are read where it keeps
// them.
func canonicalHeader(r *http.Request, h string) string {
	var vals []string
	switch h {
	case "host":
		vals = []string{r.Host}
	case "transfer-encoding":
		vals = r.TransferEncoding
	case "content-length":
		vals = r.Header.Values(h)
		if len(vals) == 0 && r.ContentLength >= 0 {
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	default:
		vals = r.Header.Values(h)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

// canonicalQuery is the canonical form of a query: each name and value
// decoded and encoded again as SigV4 encodes them, sorted by name and
// then value; a presigned URL's own signature is left out.
func canonicalQuery(raw string, presigned bool) string {
	if raw == "" {
		return ""
	}
	var pairs []string
	for f := range strings.SplitSeq(raw, "&") {
		if f == "" {
			continue
		}
		k, v, _ := strings.Cut(f, "=")
		dk, err := url.QueryUnescape(k)
		if err != nil {
			dk = k
		}
		if presigned && dk == "X-Amz-Signature" {
			continue
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			dv = v
		}
		pairs = append(pairs, uriEncode(dk, false)+"="+uriEncode(dv, false))
	}
	slices.SortFunc(pairs, func(a, b string) int {
		ak, av, _ := strings.Cut(a, "=")
		bk, bv, _ := strings.Cut(b, "=")
		if c := strings.Compare(ak, bk); c != 0 {
			return c
		}
		return strings.Compare(av, bv)
	})
	return strings.Join(pairs, "&")
}

// uriEncode encodes s as SigV4 does: every byte but the unreserved ones
// (letters, digits, '-', '.', '_', '~') as %XX in upper case, and '/'
// kept when slash.
func uriEncode(s string, slash bool) string {
	const hexUpper = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		case c == '/' && slash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&15])
		}
	}
	return b.String()
}

// Package s3api is largo's S3 front end: the S3 REST API (path-style and
// virtual-hosted addressing, AWS Signature Version 4) over the store
// largo serves, as one bucket whose keys are the store's names.
//
// It is a front end and nothing more: every read and write goes through
// the same doors as every other protocol's. Reads, listings and removals
// go through the gate's store (package gate), which decides each call for
// the request's principal, so that a name the principal may not see never
// appears in a listing; writes go through the write pipeline (package
// ingest: admission before the body, quotas, the pre-upload hook with
// protocol "s3", the digest, the record of the file, notifications). The
// package holds S3's grammar (its requests, XML, errors, signatures,
// aws-chunked bodies and checksums) and decides nothing about access,
// space or state.
//
// Who a request comes from is its signature's access key: a user's S3
// key of the access file (auth.Policy), whose secret signs the request
// in the Authorization header, or in the query of a presigned URL
// (X-Amz-Expires at most a week), within 15 minutes of the server's
// clock; a streaming body's chunks are checked one by one as they arrive
// (sigv4.go, chunked.go). A request with no signature is anonymous, and
// gets what the rules give anonymous.
//
// One bucket (Config.Bucket) stands for the whole store: it is listed by
// ListBuckets, answers HeadBucket and GetBucketLocation, and its keys are
// the store's names, so that a file written over S3 is the same file
// over HTTP, WebDAV or tus. Folders are key prefixes: a listing with the
// delimiter "/" shows them as common prefixes; one without walks them.
// An object's user metadata (x-amz-meta-*) and its Content-Type and
// other representation headers are kept in the file's record
// (record.File.Meta), written with the file at commit.
//
// Multipart uploads (multipart.go) stage each part as it arrives, in
// the store's state area, never in memory: on a folder, parts are
// written at their place in one sparse file when the parts are of one
// size, so that completing is a rename; on a bucket, each part streams
// into a multipart upload of the bucket at the object's own key, which
// completing completes.
//
// What is not implemented (versioning, ACLs, tagging, lifecycle, object
// lock, SSE, other buckets) answers NotImplemented. Errors are S3's XML
// documents, their codes mapped from largo's error kinds in one table
// (errors.go).
//
// A Handler is safe for concurrent use.
package s3api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"largo"
	"largo/auth"
	"largo/digests"
	"largo/gate"
	"largo/ingest"
	"largo/listing"
	"largo/record"
)

// Keys finds who signs with an S3 access key: the access file's users
// (auth.Access). Implementations must be safe for concurrent use.
type Keys interface {
	// S3Key returns the user whose access key id is, and its secret,
	// for a request from r's client: auth.ErrTooManyFailures when that
	// client failed too often, auth.ErrBadCredential for an id no user
	// has (counted as a failure).
	S3Key(r *http.Request, id string) (user, secret string, err error)
	// Failed counts a signature that did not match against r's client.
	Failed(r *http.Request)
}

// Config configures a Handler. Store and Keys are required.
type Config struct {
	// Store is the gate's store: every read, listing and removal is
	// decided there for the request's principal.
	Store *gate.Store
	// Writes is the write pipeline, over the same gate's store; nil
	// makes the bucket read-only (writes are AccessDenied).
	Writes *ingest.Pipeline
	// Keys identifies the signers.
	Keys Keys
	// Bucket is the bucket's name; "" means DefaultBucket.
	Bucket string
	// Region is the region GetBucketLocation answers; "" means
	// "us-east-1". Requests signed for any region are accepted.
	Region string
	// Files are the records of files, where an object's metadata is
	// kept (record.File.Meta); nil keeps none.
	Files *record.Files
	// Digests answers the SHA-256 of a file's version (Repr-Digest, and
	// x-amz-checksum-sha256 to a client that asks); nil knows none.
	Digests *digests.Keeper
	// Uploads keeps the multipart uploads; nil answers them
	// NotImplemented.
	Uploads *Uploads
	// Listing bounds the memory of listings (package listing): the
	// server's budget, shared with the file tree's listings.
	Listing listing.Config
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the causes of failures; nil discards them.
	Logger *slog.Logger
}

// DefaultBucket is the bucket's name when Config.Bucket is empty.
const DefaultBucket = "largo"

// Handler serves the S3 API. Make one with New.
type Handler struct {
	cfg Config
	log *slog.Logger
	// keepAlive is how often a long Complete sends a space
	// (keepalive.go).
	keepAlive time.Duration
}

// New returns the Handler of cfg.
func New(cfg Config) *Handler {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, keepAlive: keepAliveEvery}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h
}

// Bucket returns the bucket's name.
func (h *Handler) Bucket() string { return h.cfg.Bucket }

// requestIDHeader carries each answer's request ID, which an error's
// document repeats.
const requestIDHeader = "X-Amz-Request-Id"

type signatureKey struct{}

// withSignature returns ctx carrying the signature its request was
// identified by.
func withSignature(ctx context.Context, sig *signature) context.Context {
	return context.WithValue(ctx, signatureKey{}, sig)
}

// signatureOf returns the signature a request was identified by, nil for
// an anonymous one.
func signatureOf(r *http.Request) *signature {
	s, _ := r.Context().Value(signatureKey{}).(*signature)
	return s
}

// Identify finds who r comes from: the user whose S3 key signed it, or
// anonymous when it carries no signature. It returns r carrying its
// principal (package gate) and its signature, or the refusal of a
// signature that does not verify. Nothing of the body is read.
func (h *Handler) Identify(r *http.Request) (*http.Request, error) {
	s, ok, err := signedBy(r)
	if err != nil {
		return r, err
	}
	if !ok {
		return r.WithContext(gate.With(r.Context(), gate.Anonymous())), nil
	}
	if err := s.checkTime(h.cfg.Now()); err != nil {
		return r, err
	}
	user, secret, err := h.cfg.Keys.S3Key(r, s.cred.id)
	switch {
	case errors.Is(err, auth.ErrTooManyFailures):
		return r, errTooMany
	case errors.Is(err, auth.ErrBusy):
		return r, errBusyKeys
	case err != nil:
		return r, errUnknownKey
	}
	sig, err := s.verify(r, secret)
	if err != nil {
		h.cfg.Keys.Failed(r)
		return r, err
	}
	ctx := gate.With(r.Context(), gate.User(user))
	return r.WithContext(withSignature(ctx, sig)), nil
}

// Refuse answers err, what Identify refused r with, or any failure
// before r reached the handler.
func (h *Handler) Refuse(w http.ResponseWriter, r *http.Request, err error) {
	continueEmpty(w, r)
	h.fail(w, r, err)
}

// continueEmpty sends a 100 Continue to a request with an empty body
// that asks for one. botocore (the aws CLI, boto3) asks before an empty
// body too, which net/http never answers, and takes a final answer that
// comes without it for the answer to the next request on the connection
// too, which then waits for its read timeout. S3 sends it: so does this.
func continueEmpty(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		w.WriteHeader(http.StatusContinue)
	}
}

// ServeHTTP serves r, which Identify returned.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if w.Header().Get(requestIDHeader) == "" {
		w.Header().Set(requestIDHeader, newID())
	}
	continueEmpty(w, r)
	if err := h.route(w, r); err != nil {
		h.fail(w, r, err)
	}
}

// fail answers err in S3's terms and logs its cause.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if w.Header().Get(requestIDHeader) == "" {
		w.Header().Set(requestIDHeader, newID())
	}
	e := toError(err)
	if e.Status >= 500 && !errors.Is(err, context.Canceled) {
		h.log.Warn("s3: request failed", "method", r.Method, "path", r.URL.Path, "code", e.Code, "err", err)
	} else {
		h.log.Debug("s3: request refused", "method", r.Method, "path", r.URL.Path, "code", e.Code, "err", err)
	}
	writeError(w, r, e)
}

// newID returns a fresh random ID in hex: a request's, an upload's.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// route finds the operation of r and serves it.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) error {
	bucket, key := h.target(r)
	q := r.URL.Query()
	switch {
	case bucket == "":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return errNotAllowed
		}
		return h.listBuckets(w, r)
	case bucket != h.cfg.Bucket:
		if r.Method == http.MethodPut && key == "" {
			return errOneBucket
		}
		return errNoSuchBucket
	case key == "":
		return h.bucket(w, r, q)
	}
	return h.object(w, r, key, q)
}

// target returns the bucket and the key r addresses: virtual-hosted
// (BUCKET.host/KEY) when its host name begins with the bucket's name and
// a dot, path-style (/BUCKET/KEY) otherwise.
func (h *Handler) target(r *http.Request) (bucket, key string) {
	host := r.Host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		host = hn
	}
	if strings.HasPrefix(host, h.cfg.Bucket+".") {
		return h.cfg.Bucket, strings.TrimPrefix(r.URL.Path, "/")
	}
	p := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

// bucket serves the operations on the bucket itself.
func (h *Handler) bucket(w http.ResponseWriter, r *http.Request, q map[string][]string) error {
	sub := subresource(q, bucketParams)
	switch r.Method {
	case http.MethodHead:
		if sub != "" {
			return notImplemented("HEAD ?" + sub)
		}
		return nil // the bucket is there, whoever asks
	case http.MethodGet:
		switch sub {
		case "":
			return h.list(w, r)
		case "location":
			return writeXML(w, http.StatusOK, locationConstraint{Region: h.location()})
		case "versioning":
			return writeXML(w, http.StatusOK, versioningConfiguration{})
		case "uploads":
			return h.listUploads(w, r)
		}
		return notImplemented("GET ?" + sub)
	case http.MethodPut:
		if sub == "" {
			return errBucketOwned
		}
		return notImplemented("PUT ?" + sub)
	case http.MethodPost:
		if sub == "delete" {
			return h.deleteObjects(w, r)
		}
		return notImplemented("POST ?" + sub)
	case http.MethodDelete:
		if sub == "" {
			return errOneBucket
		}
		return notImplemented("DELETE ?" + sub)
	}
	return errNotAllowed
}

// location is the LocationConstraint of the bucket: S3 answers none for
// us-east-1.
func (h *Handler) location() string {
	if h.cfg.Region == "us-east-1" {
		return ""
	}
	return h.cfg.Region
}

// object serves the operations on the object key.
func (h *Handler) object(w http.ResponseWriter, r *http.Request, key string, q map[string][]string) error {
	sub := subresource(q, objectParams)
	_, copying := r.Header["X-Amz-Copy-Source"]
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case sub == "uploadId" && r.Method == http.MethodGet:
			return h.listParts(w, r, key)
		case sub == "partNumber":
			// The parts of a completed upload are not kept apart: every
			// object is one part, its first (what S3 answers for an
			// object put whole).
			if n := q["partNumber"]; len(n) != 1 || n[0] != "1" {
				return errPartNumberRead
			}
			r.Header.Del("Range")
		case sub != "":
			return notImplemented(r.Method + " ?" + sub)
		}
		return h.get(w, r, key)
	case http.MethodPut:
		switch {
		case sub == "partNumber" || sub == "uploadId":
			if copying {
				return h.uploadPartCopy(w, r, key)
			}
			return h.uploadPart(w, r, key)
		case sub != "":
			return notImplemented("PUT ?" + sub)
		case copying:
			return h.copyObject(w, r, key)
		}
		return h.put(w, r, key)
	case http.MethodPost:
		switch sub {
		case "uploads":
			return h.createUpload(w, r, key)
		case "uploadId":
			return h.completeUpload(w, r, key)
		}
		return notImplemented("POST ?" + sub)
	case http.MethodDelete:
		switch sub {
		case "uploadId":
			return h.abortUpload(w, r, key)
		case "":
			return h.deleteObject(w, r, key)
		}
		return notImplemented("DELETE ?" + sub)
	}
	return errNotAllowed
}

// The query parameters that are an operation's, not a subresource.
var (
	bucketParams = map[string]bool{
		"prefix": true, "delimiter": true, "marker": true, "max-keys": true, "encoding-type": true,
		"list-type": true, "continuation-token": true, "start-after": true, "fetch-owner": true,
		"key-marker": true, "upload-id-marker": true, "max-uploads": true, "x-id": true,
	}
	objectParams = map[string]bool{
		"response-content-type": true, "response-content-language": true, "response-expires": true,
		"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
		"max-parts": true, "part-number-marker": true, "x-id": true,
	}
)

// subresource returns the subresource q names (a parameter that is no
// operation's, nor a signature's), "" for none. Of several, uploadId
// and partNumber go before the others.
func subresource(q map[string][]string, own map[string]bool) string {
	sub := ""
	for k := range q {
		switch {
		case own[k], strings.HasPrefix(k, "X-Amz-"), strings.HasPrefix(k, "x-amz-"):
			continue
		case k == "uploadId" || k == "partNumber":
			return k
		case sub == "" || k < sub:
			sub = k
		}
	}
	return sub
}

// writeXML answers v as an XML document.
func writeXML(w http.ResponseWriter, status int, v any) error {
	b, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(xml.Header)+len(b)))
	w.WriteHeader(status)
	w.Write([]byte(xml.Header))
	w.Write(b)
	return nil
}

// name returns the store's name of key, or the refusal of a key that
// can be no name (empty, '.' and '..' segments, control characters).
// dir reports a key that ends with a slash: a folder's.
func name(key string) (n string, dir bool, err error) {
	if key == "" {
		return "", false, errInvalidKey
	}
	n, err = largo.ParseName("/" + key)
	if err != nil || n == "" || strings.HasSuffix(key, "//") {
		return "", false, fmt.Errorf("%w: %w", errInvalidKey, err)
	}
	return n, strings.HasSuffix(key, "/"), nil
}

// writeKey returns the pipeline and the name of key, for a write to it:
// the refusal of a server that takes no writes, or of a key that can be
// no name; dir reports a folder's key.
func (h *Handler) writeKey(key string) (wr *ingest.Pipeline, n string, dir bool, err error) {
	if wr, err = h.write(); err != nil {
		return nil, "", false, err
	}
	n, dir, err = name(key)
	return wr, n, dir, err
}

// write returns the pipeline, or the refusal of a server that takes no
// writes.
func (h *Handler) write() (*ingest.Pipeline, error) {
	if h.cfg.Writes == nil {
		return nil, errReadOnly
	}
	return h.cfg.Writes, nil
}

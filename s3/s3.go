// Package s3 implements largo.Store on a bucket of an S3-compatible object
// store, through github.com/minio/minio-go/v7.
//
// A name maps to the key Prefix+name. Folders are not objects: a folder
// exists when any key starts with its name and a slash, and listings come
// from ListObjectsV2 with "/" as the delimiter, page by page as they are
// consumed, keys as files and common prefixes as folders. A key that is not
// a valid largo name (an empty, "." or ".." element, a backslash, a control
// byte) is never listed, and hidden names (see largo.Hidden) are left out
// like on disk. A name that is both an object and a key prefix is the
// object.
//
// Stat and Open cost one HEAD (plus one LIST, to tell a folder from nothing,
// when there is no such object). The file Open returns reads lazily: nothing
// is fetched until the first Read, and then ranged GETs of a window that
// starts small and doubles up to a cap, each conditional on the ETag seen at
// Open (If-Match), so that a replaced object fails the read instead of
// splicing two versions into one body. Bytes are read from the connection
// only as the caller reads them, so what is fetched stays close to what is
// consumed; Seek only moves the offset, and Close (or the cancellation of
// the context given to Open, such as an HTTP request's) ends the request in
// flight at once.
//
// Why not minio-go's own object handle (minio.Object), which DESIGN.md
// names: it asks for an open-ended range on the first Read, spends a
// goroutine per open object, and issues a fresh HEAD on a Seek before the
// first Read, which is the very pattern of http.ServeContent. Its Read also
// blocks until the whole buffer is full. The few lines here do one HEAD per
// download and bounded GETs on the connection pool.
//
// A Store is safe for concurrent use; the files it opens are not.
package s3

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"largo"
)

// Config tells a Store where its bucket is. Bucket is required; the zero
// value of every other field has the meaning its comment gives.
type Config struct {
	// Bucket is the bucket's name.
	Bucket string
	// Prefix is prepended to every name to make its key: "" serves the
	// whole bucket, "site" serves the keys under "site/". Leading and
	// trailing slashes are ignored.
	Prefix string
	// Endpoint is the server's URL: "http://127.0.0.1:7070" or
	// "https://s3.example.net". A bare host:port means https. Empty means
	// Amazon S3.
	Endpoint string
	// Region is the bucket's region; empty lets the client discover it
	// (and sign for us-east-1 until it has).
	Region string
	// AccessKey, SecretKey and SessionToken are the credentials. All
	// empty means anonymous requests, for public buckets.
	AccessKey, SecretKey, SessionToken string
	// VirtualHost addresses the bucket as a host name (bucket.endpoint)
	// instead of a path (endpoint/bucket). Path-style, the default, is what
	// S3-compatible servers support everywhere.
	VirtualHost bool
	// Transport carries the requests; nil means minio-go's default
	// transport, keeping up to 64 idle connections to the store.
	Transport http.RoundTripper
	// MaxRetries is how many times a failed request is tried in all; zero
	// means 3.
	MaxRetries int
}

// Store is a largo.Store on an S3 bucket. Create one with New.
type Store struct {
	client *minio.Client
	core   minio.Core
	bucket string
	prefix string // "" or ending in "/"
	page   int    // keys per listing request; 0 is the server's default (1,000)

	transport http.RoundTripper
}

// idleConns is how many idle connections to the store are kept for reuse:
// enough for a few dozen downloads at once, each between two windows.
const idleConns = 64

// Close closes the idle connections to the store. Files already open stay
// usable, and the Store too: it opens new connections as needed.
func (s *Store) Close() error {
	if c, ok := s.transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return nil
}

var _ largo.Store = (*Store)(nil)

// ParseURL splits a store URL of the form s3://BUCKET/PREFIX into the
// bucket and the prefix (which may be empty).
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("%q is not of the form s3://BUCKET/PREFIX", raw)
	}
	if err := s3utils.CheckValidBucketName(u.Host); err != nil {
		return "", "", fmt.Errorf("bucket %q: %v", u.Host, err)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if _, err := largo.ParseName("/" + prefix); err != nil {
			return "", "", fmt.Errorf("prefix %q: %v", prefix, err)
		}
	}
	return u.Host, prefix, nil
}

// New returns a Store for cfg after checking, with one listing request,
// that the bucket exists and that the credentials may read it: a wrong
// bucket, endpoint or key is an error here rather than on the first
// download.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("no bucket")
	}
	if err := s3utils.CheckValidBucketName(cfg.Bucket); err != nil {
		return nil, fmt.Errorf("bucket %q: %v", cfg.Bucket, err)
	}
	host, secure, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	tr := cfg.Transport
	if tr == nil {
		t, err := minio.DefaultTransport(secure)
		if err != nil {
			return nil, err
		}
		t.MaxIdleConnsPerHost = idleConns
		tr = t
	}
	opts := &minio.Options{
		Secure:       secure,
		Region:       cfg.Region,
		Transport:    tr,
		MaxRetries:   cfg.MaxRetries,
		BucketLookup: minio.BucketLookupPath,
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 3
	}
	if cfg.VirtualHost {
		opts.BucketLookup = minio.BucketLookupDNS
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		opts.Creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		opts.Creds = credentials.New(&credentials.Static{}) // anonymous
	}
	client, err := minio.New(host, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{client: client, core: minio.Core{Client: client}, bucket: cfg.Bucket, transport: tr}
	if p := strings.Trim(cfg.Prefix, "/"); p != "" {
		s.prefix = p + "/"
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// parseEndpoint turns Config.Endpoint into minio-go's host and TLS flag.
func parseEndpoint(ep string) (host string, secure bool, err error) {
	if ep == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, fmt.Errorf("endpoint: %v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", false, fmt.Errorf("endpoint %q is not of the form http(s)://HOST[:PORT]", ep)
	}
	return u.Host, u.Scheme == "https", nil
}

// check lists one key of the prefix, which fails for a missing bucket, an
// unreachable endpoint or credentials the server refuses.
func (s *Store) check(ctx context.Context) error {
	for o := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, MaxKeys: 1, FetchOwner: new(bool)}) {
		if o.Err != nil {
			return checkErr(s.bucket, o.Err)
		}
		break
	}
	return nil
}

// checkErr words a start-up failure for the person who configured it.
func checkErr(bucket string, err error) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch {
		case er.Code == minio.NoSuchBucket:
			return fmt.Errorf("bucket %q does not exist", bucket)
		case er.StatusCode == http.StatusForbidden || er.StatusCode == http.StatusUnauthorized || credentialCodes[er.Code]:
			return fmt.Errorf("bucket %q refused the credentials: %s (%s)", bucket, er.Code, oneLine(er.Message))
		}
		if er.Code != "" {
			return fmt.Errorf("bucket %q: %s: %s", bucket, er.Code, oneLine(er.Message))
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("cannot reach the endpoint: %v", ue.Err)
	}
	return fmt.Errorf("bucket %q: %v", bucket, oneLine(err.Error()))
}

// credentialCodes are the error codes of refused credentials, whatever
// status a server sends them with (versitygw answers an unknown key 404).
var credentialCodes = map[string]bool{
	minio.AccessDenied:          true,
	minio.InvalidAccessKeyID:    true,
	minio.SignatureDoesNotMatch: true,
	"InvalidToken":              true,
	"ExpiredToken":              true,
	"XAdminUserNotFound":        true,
}

// oneLine keeps the first line of a message, at most 200 bytes of it.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the key prefix, "" or ending with a slash.
func (s *Store) Prefix() string { return s.prefix }

// key is the object key of a name.
func (s *Store) key(name string) string { return s.prefix + name }

// Stat implements largo.Store.
func (s *Store) Stat(ctx context.Context, name string) (largo.Info, error) {
	if name == "" {
		return largo.Info{IsDir: true}, nil
	}
	oi, err := s.head(ctx, name)
	switch {
	case err == nil:
		return fileInfo(name, oi), nil
	case errors.Is(err, largo.ErrIsDir):
		return largo.Info{Name: name[strings.LastIndexByte(name, '/')+1:], IsDir: true}, nil
	}
	return largo.Info{}, err
}

// head returns the object of name, or, when there is none, an error
// wrapping largo.ErrIsDir for a folder and largo.ErrNotFound otherwise.
func (s *Store) head(ctx context.Context, name string) (minio.ObjectInfo, error) {
	if name == "" {
		return minio.ObjectInfo{}, fmt.Errorf("the root: %w", largo.ErrIsDir)
	}
	oi, err := s.client.StatObject(ctx, s.bucket, s.key(name), minio.StatObjectOptions{})
	if err == nil {
		return oi, nil
	}
	err = mapErr(name, err)
	if !errors.Is(err, largo.ErrNotFound) {
		return minio.ObjectInfo{}, err
	}
	dir, derr := s.isDir(ctx, name)
	switch {
	case derr != nil:
		return minio.ObjectInfo{}, derr
	case dir:
		return minio.ObjectInfo{}, fmt.Errorf("%s: %w", name, largo.ErrIsDir)
	}
	return minio.ObjectInfo{}, err
}

// isDir reports whether any key lies under the folder name. An empty
// folder is a marker object named with a trailing slash, which counts.
func (s *Store) isDir(ctx context.Context, name string) (bool, error) {
	opts := minio.ListObjectsOptions{Prefix: s.key(name) + "/", MaxKeys: 1, FetchOwner: new(bool)}
	for o := range s.client.ListObjectsIter(ctx, s.bucket, opts) {
		if o.Err != nil {
			return false, mapErr(name, o.Err)
		}
		return true, nil
	}
	return false, nil
}

// Open implements largo.Store.
func (s *Store) Open(ctx context.Context, name string) (largo.File, error) {
	oi, err := s.head(ctx, name)
	if err != nil {
		return nil, err
	}
	return newFile(ctx, s, name, oi), nil
}

// List implements largo.Store.
func (s *Store) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		dir := s.prefix
		if name != "" {
			dir = s.key(name) + "/"
		}
		opts := minio.ListObjectsOptions{Prefix: dir, FetchOwner: new(bool), MaxKeys: s.page}
		found := name == "" // the root exists even when empty
		for o := range s.client.ListObjectsIter(ctx, s.bucket, opts) {
			if o.Err != nil {
				yield(largo.Info{}, mapErr(name, o.Err))
				return
			}
			found = true
			elem, isDir := strings.CutSuffix(o.Key[len(dir):], "/")
			if elem == "" || !validElem(elem) {
				continue // the folder's own marker, or a key no URL can name
			}
			in := largo.Info{Name: elem, IsDir: true}
			if !isDir {
				in = fileInfo(elem, o)
			}
			if !yield(in, nil) {
				return
			}
		}
		if found {
			return
		}
		// Nothing under the name: a file, or nothing at all.
		_, err := s.client.StatObject(ctx, s.bucket, s.key(name), minio.StatObjectOptions{})
		if err == nil {
			err = fmt.Errorf("%s: %w", name, largo.ErrNotDir)
		} else {
			err = mapErr(name, err)
		}
		yield(largo.Info{}, err)
	}
}

// validElem reports whether elem is one element of a valid, visible name.
func validElem(elem string) bool {
	if strings.HasPrefix(elem, ".") || strings.Contains(elem, "/") {
		return false
	}
	n, err := largo.ParseName("/" + elem)
	return err == nil && n == elem
}

// fileInfo is the metadata of an object. Its ETag is the object's, quoted:
// strong, since S3 changes it with the content.
func fileInfo(name string, oi minio.ObjectInfo) largo.Info {
	return largo.Info{
		Name:        name[strings.LastIndexByte(name, '/')+1:],
		Size:        oi.Size,
		ModTime:     oi.LastModified,
		ETag:        quoteETag(oi.ETag),
		ContentType: oi.ContentType,
	}
}

// quoteETag puts an S3 ETag (unquoted by minio-go) in HTTP form, or
// returns "" when it holds characters an HTTP entity tag may not.
func quoteETag(e string) string {
	if e == "" {
		return ""
	}
	for i := 0; i < len(e); i++ {
		if c := e[i]; c <= 0x20 || c == '"' || c == 0x7f {
			return ""
		}
	}
	return `"` + e + `"`
}

// mapErr wraps an S3 error in the largo error kind it means, keeping the
// cause for the log.
func mapErr(name string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", name, err)
	}
	var er minio.ErrorResponse
	if !errors.As(err, &er) {
		return fmt.Errorf("%s: %w", name, err)
	}
	var kind error
	switch {
	case er.Code == minio.NoSuchKey || er.Code == "NotFound":
		kind = largo.ErrNotFound
	case er.Code == minio.AccessDenied || er.Code == "AllAccessDisabled":
		kind = largo.ErrPermission
	case er.Code == minio.PreconditionFailed || er.StatusCode == http.StatusPreconditionFailed:
		kind = largo.ErrPrecondition
	case er.Code == minio.NoSuchBucket:
		// The configured bucket vanished: the server's fault, not the
		// client's, so no kind (a 500 that is logged).
		return fmt.Errorf("%s: bucket gone: %w", name, err)
	case credentialCodes[er.Code] && er.Code != minio.AccessDenied:
		// Credentials that stopped working: the server's fault, a 500.
		return fmt.Errorf("%s: credentials refused: %w", name, err)
	case er.StatusCode == http.StatusNotFound:
		kind = largo.ErrNotFound
	case er.StatusCode == http.StatusForbidden:
		kind = largo.ErrPermission
	default:
		return fmt.Errorf("%s: %s: %w", name, er.Code, err)
	}
	return fmt.Errorf("%s: %w: %s: %w", name, kind, er.Code, err)
}

// Package s3 implements largo.Store on a bucket of an S3-compatible object
// store, through the S3 client of github.com/aws/aws-sdk-go-v2.
//
// A name maps to the key Prefix+name; folders are key prefixes, listed page
// by page with ListObjectsV2; keys that are no valid largo name, and hidden
// names, are never listed. Open returns a file that reads lazily, in ranged
// GETs of a growing window, each conditional on the ETag seen at Open
// (If-Match), fetching only as the caller reads.
//
// Writes (write.go, send.go, chunked.go, remove.go) implement
// largo.Creator, largo.Adopter and largo.Remover: an upload is invisible
// until Commit, streamed as one unsigned aws-chunked PUT (a known length up
// to 5 GiB, its last byte held back until Commit), as streamed multipart
// parts (beyond 5 GiB), or as parts buffered in memory (an unknown length,
// at most PartSize x PartConcurrency per upload). Conditions travel with
// the request that makes the object visible, so commits are atomic across
// instances; PrepareWrites probes whether the server applies them. Sweep
// aborts the multipart uploads crashed instances left. Why each of these
// choices, and what the SDK's managers would do instead, is in the design
// document, docs/design.md ("The bucket store").
//
// With Config.Slices, files are read through a cache of slices on the
// local disk (package slicecache, slices.go), sent by sendfile.
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
	"largo/internal/keylock"
	"largo/slicecache"
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
	// Region is the bucket's region; empty makes New ask the server.
	Region string
	// AccessKey, SecretKey and SessionToken are the credentials. All
	// empty means anonymous requests, for public buckets.
	AccessKey, SecretKey, SessionToken string
	// VirtualHost addresses the bucket as a host name (bucket.endpoint)
	// instead of a path (endpoint/bucket). Path-style, the default, is what
	// S3-compatible servers support everywhere.
	VirtualHost bool
	// Transport carries the requests; nil means a transport of HTTP/1.1
	// connections keeping up to 64 idle ones to the store.
	Transport http.RoundTripper
	// MaxRetries is how many times a failed request is tried in all; zero
	// means 3. A body streamed as it arrives is tried once.
	MaxRetries int
	// PartSize is the size of the parts of multipart uploads (bodies
	// larger than one PUT may carry, or of unknown length), and so of the
	// buffers of a body of unknown length; zero means DefaultPartSize. It
	// must lie between MinPartSize and MaxPartSize.
	PartSize int64
	// PartConcurrency is how many parts of one body of unknown length
	// exist at once: the one being filled and those being sent. Such an
	// upload holds at most PartSize x PartConcurrency bytes of memory.
	// Zero means DefaultPartConcurrency.
	PartConcurrency int
	// Slices, when set, keeps the slices of the objects read on the local
	// disk, and files opened read through it (slices.go).
	Slices *slicecache.Cache
	// Instances says whether several instances may share the bucket;
	// the zero value, InstancesAuto, lets PrepareWrites decide from what
	// the server applies (engine.go).
	Instances Instances
	// Checksum says how a body streamed as it arrives is guarded; the
	// zero value, ChecksumAuto, sends a checksum trailer where the
	// server takes it.
	Checksum Checksum
}

// Defaults and limits of the write settings.
const (
	DefaultPartSize        = 16 << 20
	DefaultPartConcurrency = 2
	// MinPartSize and MaxPartSize are S3's bounds on the parts of a
	// multipart upload (the last part may be smaller).
	MinPartSize = 5 << 20
	MaxPartSize = 5 << 30
)

// Store is a largo.Store on an S3 bucket. Create one with New.
type Store struct {
	api    *awss3.Client
	bucket string
	region string
	prefix string // "" or ending in "/"
	page   int32  // keys per listing request; 0 is the server's default (1,000)

	transport http.RoundTripper

	// The write side (write.go).
	partSize  int64
	partConc  int
	maxSingle int64    // largest body sent as one PUT
	copyPart  int64    // largest part of a server-side copy
	active    sync.Map // multipart upload IDs of uploads in progress here

	// What the server takes (engine.go), found by PrepareWrites.
	instances Instances
	checksum  Checksum
	engineMu  sync.Mutex   // guards gaps
	gaps      []string     // what the server lacks of conditional writes
	local     atomic.Bool  // conditions are applied in this process, not sent
	trailers  atomic.Bool  // streamed bodies carry a checksum trailer
	locks     keylock.Set  // by key, the conditional writes made here while local
	noCopy    atomic.Bool  // the server refuses UploadPartCopy (copy.go)
	plus      atomic.Int32 // what a plus in a url-encoded listing stands for (list.go)

	slices *slicecache.Cache // nil: files read from the bucket alone
}

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
	if err := CheckBucketName(u.Host); err != nil {
		return "", "", err
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if _, err := largo.ParseName("/" + prefix); err != nil {
			return "", "", fmt.Errorf("prefix %q: %v", prefix, err)
		}
	}
	return u.Host, prefix, nil
}

// CheckBucketName checks a bucket name against S3's rules: 3 to 63
// lower-case letters, digits, dots and hyphens, a letter or digit at both
// ends, no two dots in a row, no dot beside a hyphen, and not an IP
// address.
func CheckBucketName(b string) error {
	bad := func(why string) error { return fmt.Errorf("bucket %q: %s", b, why) }
	if len(b) < 3 || len(b) > 63 {
		return bad("a bucket name has 3 to 63 characters")
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return bad("a bucket name has only lower-case letters, digits, dots and hyphens")
		}
	}
	if end := b[len(b)-1]; b[0] == '.' || b[0] == '-' || end == '.' || end == '-' {
		return bad("a bucket name begins and ends with a letter or a digit")
	}
	if strings.Contains(b, "..") || strings.Contains(b, ".-") || strings.Contains(b, "-.") {
		return bad("a bucket name has no two dots in a row and no dot beside a hyphen")
	}
	if isIPv4(b) {
		return bad("a bucket name is not an IP address")
	}
	return nil
}

// isIPv4 reports whether s reads as a dotted IPv4 address.
func isIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// New returns a Store for cfg after checking, with one listing request,
// that the bucket exists and that the credentials may read it: a wrong
// bucket, endpoint or key is an error here rather than on the first
// download. Without cfg.Region it first asks the server for the bucket's
// region.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("no bucket")
	}
	if err := CheckBucketName(cfg.Bucket); err != nil {
		return nil, err
	}
	endpoint, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if cfg.PartSize < MinPartSize || cfg.PartSize > MaxPartSize {
		return nil, fmt.Errorf("part size %d: must be between %d (5 MiB) and %d (5 GiB)", cfg.PartSize, MinPartSize, MaxPartSize)
	}
	if cfg.PartConcurrency == 0 {
		cfg.PartConcurrency = DefaultPartConcurrency
	}
	if cfg.PartConcurrency < 1 {
		return nil, fmt.Errorf("part concurrency %d: must be at least 1", cfg.PartConcurrency)
	}
	if cfg.Transport == nil {
		cfg.Transport = newTransport()
	}
	region := cfg.Region
	if region == "" {
		if region, err = discoverRegion(ctx, newAPI(cfg, endpoint, defaultRegion), cfg.Bucket); err != nil {
			return nil, checkErr(cfg.Bucket, err)
		}
	}
	s := &Store{
		api:       newAPI(cfg, endpoint, region),
		bucket:    cfg.Bucket,
		region:    region,
		transport: cfg.Transport,
		partSize:  cfg.PartSize,
		partConc:  cfg.PartConcurrency,
		maxSingle: maxSinglePut,
		copyPart:  maxCopyPart,
		slices:    cfg.Slices,
		instances: cfg.Instances,
		checksum:  cfg.Checksum,
	}
	s.trailers.Store(cfg.Checksum != ChecksumOff)
	s.local.Store(cfg.Instances == InstancesOne)
	if p := strings.Trim(cfg.Prefix, "/"); p != "" {
		s.prefix = p + "/"
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// parseEndpoint turns Config.Endpoint into the SDK's base endpoint: nil
// for Amazon S3, whose endpoint the SDK derives from the region.
func parseEndpoint(ep string) (*string, error) {
	if ep == "" {
		return nil, nil
	}
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("endpoint %q is not of the form http(s)://HOST[:PORT]", ep)
	}
	return aws.String(u.Scheme + "://" + u.Host), nil
}

// check lists one key of the prefix, which fails for a missing bucket, an
// unreachable endpoint or credentials the server refuses.
func (s *Store) check(ctx context.Context) error {
	_, err := s.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &s.prefix, MaxKeys: aws.Int32(1)})
	if err != nil {
		return checkErr(s.bucket, err)
	}
	return nil
}

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// Region returns the bucket's region: the configured one, else the one
// the server reported at New ("us-east-1" when it reported none).
func (s *Store) Region() string { return s.region }

// Prefix returns the key prefix, "" or ending with a slash.
func (s *Store) Prefix() string { return s.prefix }

// Shared is what another user of a Store's bucket needs to work beside it
// on the same client, such as the staging of resumable uploads, which
// keeps its objects under the prefix in largo.StateDir.
type Shared struct {
	// Client is the Store's client: its endpoint, region, credentials,
	// connection pool and retries. It is safe for concurrent use.
	Client *awss3.Client
	// Bucket is the bucket's name.
	Bucket string
	// Prefix is the Store's key prefix, "" or ending with a slash.
	Prefix string
	// PartSize and PartConcurrency are the Store's write settings (see
	// Config), with their defaults filled in.
	PartSize        int64
	PartConcurrency int
}

// Shared returns the Store's client and settings, to share.
func (s *Store) Shared() Shared {
	return Shared{Client: s.api, Bucket: s.bucket, Prefix: s.prefix, PartSize: s.partSize, PartConcurrency: s.partConc}
}

// key is the object key of a name.
func (s *Store) key(name string) string { return s.prefix + name }

// object is what a HEAD or a listing tells of an object.
type object struct {
	size  int64
	mod   time.Time
	etag  string // as the server sent it, quotes included
	ctype string
}

// Stat implements largo.Store.
func (s *Store) Stat(ctx context.Context, name string) (largo.Info, error) {
	if name == "" {
		return largo.Info{IsDir: true}, nil
	}
	o, err := s.head(ctx, name)
	switch {
	case err == nil:
		return fileInfo(name, o), nil
	case errors.Is(err, largo.ErrIsDir):
		return largo.Info{Name: name[strings.LastIndexByte(name, '/')+1:], IsDir: true}, nil
	}
	return largo.Info{}, err
}

// head returns the object of name, or, when there is none, an error
// wrapping largo.ErrIsDir for a folder and largo.ErrNotFound otherwise.
func (s *Store) head(ctx context.Context, name string) (object, error) {
	if name == "" {
		return object{}, fmt.Errorf("the root: %w", largo.ErrIsDir)
	}
	o, err := s.headKey(ctx, s.key(name))
	if err == nil {
		return o, nil
	}
	err = mapErr(name, err)
	if !errors.Is(err, largo.ErrNotFound) {
		return object{}, err
	}
	dir, derr := s.isDir(ctx, name)
	switch {
	case derr != nil:
		return object{}, derr
	case dir:
		return object{}, fmt.Errorf("%s: %w", name, largo.ErrIsDir)
	}
	return object{}, err
}

// headKey is one HEAD of key, its error as the SDK returned it.
func (s *Store) headKey(ctx context.Context, key string) (object, error) {
	out, err := s.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return object{}, err
	}
	return object{
		size:  aws.ToInt64(out.ContentLength),
		mod:   aws.ToTime(out.LastModified),
		etag:  aws.ToString(out.ETag),
		ctype: aws.ToString(out.ContentType),
	}, nil
}

// isDir reports whether any key lies under the folder name. An empty
// folder is a marker object named with a trailing slash, which counts.
func (s *Store) isDir(ctx context.Context, name string) (bool, error) {
	out, err := s.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.key(name) + "/"), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, mapErr(name, err)
	}
	return len(out.Contents) > 0, nil
}

// Open implements largo.Store.
func (s *Store) Open(ctx context.Context, name string) (largo.File, error) {
	o, err := s.head(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.open(ctx, name, o), nil
}

// List implements largo.Store.
func (s *Store) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		dir := s.prefix
		if name != "" {
			dir = s.key(name) + "/"
		}
		in := &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &dir, Delimiter: aws.String("/")}
		if s.page > 0 {
			in.MaxKeys = aws.Int32(s.page)
		}
		found := name == "" // the root exists even when empty
		// Common prefixes come in key order, page after page; some
		// servers repeat at the head of a page the last of the page
		// before: a folder is yielded once.
		var last string
		pages := s.pages(in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(largo.Info{}, mapErr(name, err))
				return
			}
			found = found || len(page.Contents) > 0 || len(page.CommonPrefixes) > 0
			for _, o := range page.Contents {
				elem := strings.TrimPrefix(aws.ToString(o.Key), dir)
				if !validElem(elem) {
					continue // the folder's own marker, or a key no URL can name
				}
				obj := object{size: aws.ToInt64(o.Size), mod: aws.ToTime(o.LastModified), etag: aws.ToString(o.ETag)}
				if !yield(fileInfo(elem, obj), nil) {
					return
				}
			}
			for _, p := range page.CommonPrefixes {
				prefix := aws.ToString(p.Prefix)
				if last != "" && prefix <= last {
					continue
				}
				last = prefix
				elem, _ := strings.CutSuffix(strings.TrimPrefix(prefix, dir), "/")
				if !validElem(elem) {
					continue
				}
				if !yield(largo.Info{Name: elem, IsDir: true}, nil) {
					return
				}
			}
		}
		if found {
			return
		}
		// Nothing under the name: a file, or nothing at all.
		_, err := s.headKey(ctx, s.key(name))
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
	if elem == "" || strings.HasPrefix(elem, ".") || strings.Contains(elem, "/") {
		return false
	}
	n, err := largo.ParseName("/" + elem)
	return err == nil && n == elem
}

// fileInfo is the metadata of an object. Its ETag is the object's, quoted:
// strong, since S3 changes it with the content.
func fileInfo(name string, o object) largo.Info {
	return largo.Info{
		Name:        name[strings.LastIndexByte(name, '/')+1:],
		Size:        o.size,
		ModTime:     o.mod,
		ETag:        quoteETag(o.etag),
		ContentType: o.ctype,
	}
}

// quoteETag puts an S3 ETag, quoted or not, in HTTP form, or returns ""
// when it holds characters an HTTP entity tag may not.
func quoteETag(e string) string {
	if len(e) >= 2 && e[0] == '"' && e[len(e)-1] == '"' {
		e = e[1 : len(e)-1]
	}
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

package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"largo"
)

// idleConns is how many idle connections to the store are kept for reuse:
// enough for a few dozen downloads at once, each between two windows.
const idleConns = 64

// defaultRegion is the region of a bucket that reports none, and the one
// requests are signed for while the region is being asked.
const defaultRegion = "us-east-1"

// newTransport returns the transport of a Store whose Config gives none:
// HTTP/1.1 (one download, one connection: no stream of HTTP/2 waits for
// another's flow control), up to idleConns idle connections, bodies as
// stored (no transparent gzip), and a minute at most for the headers of an
// answer once a request is sent.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          idleConns,
		MaxIdleConnsPerHost:   idleConns,
		IdleConnTimeout:       time.Minute,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		DisableCompression:    true,
	}
}

// newAPI returns the SDK client of cfg (whose Transport is set) for the
// base endpoint and region.
func newAPI(cfg Config, endpoint *string, region string) *awss3.Client {
	attempts := cfg.MaxRetries
	if attempts <= 0 {
		attempts = 3
	}
	opts := awss3.Options{
		Region:       region,
		BaseEndpoint: endpoint,
		UsePathStyle: !cfg.VirtualHost,
		HTTPClient: &http.Client{
			Transport: cfg.Transport,
			// S3 answers a request with a redirect only when it is sent
			// to the wrong place: an error to report, not to follow
			// (with the signature of another host).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Credentials: aws.AnonymousCredentials{},
		// No retry quota: a burst of failures must not leave the
		// requests after it without retries.
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.RateLimiter = ratelimit.None
		}),
		// Checksums only where S3 requires them: signed payloads (or
		// TLS) guard the bytes, and a ranged GET has no checksum to
		// check. Not every S3-compatible server takes the SDK's
		// trailing checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// No "Expect: 100-continue": a streamed body would wait for it.
		ContinueHeaderThresholdBytes: -1,
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds := aws.Credentials{AccessKeyID: cfg.AccessKey, SecretAccessKey: cfg.SecretKey, SessionToken: cfg.SessionToken, Source: "largo"}
		opts.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
	}
	return awss3.New(opts)
}

// discoverRegion asks the server for the bucket's region: the
// x-amz-bucket-region header of a HEAD of the bucket (which Amazon S3 sends
// with a refusal or a redirect too), else the bucket's location, else
// defaultRegion. Only a server that does not answer is an error.
func discoverRegion(ctx context.Context, api *awss3.Client, bucket string) (string, error) {
	out, err := api.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &bucket})
	switch {
	case err == nil:
		if r := aws.ToString(out.BucketRegion); r != "" {
			return r, nil
		}
	case !answered(err):
		return "", err
	default:
		var re interface{ HTTPResponse() *smithyhttp.Response }
		if errors.As(err, &re) && re.HTTPResponse() != nil {
			if r := re.HTTPResponse().Header.Get("X-Amz-Bucket-Region"); r != "" {
				return r, nil
			}
		}
	}
	loc, err := api.GetBucketLocation(ctx, &awss3.GetBucketLocationInput{Bucket: &bucket})
	if err == nil {
		switch c := string(loc.LocationConstraint); c {
		case "":
		case "EU":
			return "eu-west-1", nil
		default:
			return c, nil
		}
	}
	return defaultRegion, nil
}

// written is what the store tells of an object it has just made.
type written struct {
	etag string
	mod  time.Time // zero when the answer had no Last-Modified
}

// writtenBy returns the ETag of a write and the Last-Modified of its
// answer, if any.
func writtenBy(etag *string, md middleware.Metadata) written {
	w := written{etag: aws.ToString(etag)}
	if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		if t, err := http.ParseTime(r.Header.Get("Last-Modified")); err == nil {
			w.mod = t
		}
	}
	return w
}

// apiError returns the S3 error code and the HTTP status of an answer of
// the server, ok false for any other error (one before or on the way).
func apiError(err error) (code string, status int, msg string, ok bool) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code, msg = ae.ErrorCode(), ae.ErrorMessage()
	}
	var se interface{ HTTPStatusCode() int }
	if errors.As(err, &se) {
		status = se.HTTPStatusCode()
	}
	return code, status, msg, code != "" || status != 0
}

// errText is err in a few words, for a person: an answer of the server as
// its code and message (the SDK's own text adds the operation, request IDs
// and host IDs), any other error as it is.
func errText(err error) string {
	code, status, msg, ok := apiError(err)
	switch {
	case !ok:
		return err.Error()
	case code == "":
		return fmt.Sprintf("HTTP status %d", status)
	case msg == "" || msg == code:
		return code
	}
	return code + ": " + msg
}

// answered reports whether err is an answer of the server.
func answered(err error) bool {
	_, _, _, ok := apiError(err)
	return ok
}

// checkErr words a start-up failure for the person who configured it.
func checkErr(bucket string, err error) error {
	if code, status, msg, ok := apiError(err); ok {
		switch {
		case code == "NoSuchBucket":
			return fmt.Errorf("bucket %q does not exist", bucket)
		case status == http.StatusForbidden || status == http.StatusUnauthorized || credentialCodes[code]:
			return fmt.Errorf("bucket %q refused the credentials: %s (%s)", bucket, code, oneLine(msg))
		case code != "":
			return fmt.Errorf("bucket %q: %s: %s", bucket, code, oneLine(msg))
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("cannot reach the endpoint: %v", oneLine(ue.Err.Error()))
	}
	return fmt.Errorf("bucket %q: %v", bucket, oneLine(errText(err)))
}

// credentialCodes are the error codes of refused credentials, whatever
// status a server sends them with (versitygw answers an unknown key 404).
var credentialCodes = map[string]bool{
	"AccessDenied":          true,
	"InvalidAccessKeyId":    true,
	"SignatureDoesNotMatch": true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
	"XAdminUserNotFound":    true,
}

// oneLine keeps the first line of a message, at most 200 bytes of it.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// mapErr wraps an S3 error in the largo error kind it means, keeping the
// cause for the log.
func mapErr(name string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", name, err)
	}
	code, status, _, ok := apiError(err)
	if !ok {
		return fmt.Errorf("%s: %w", name, err)
	}
	var kind error
	switch {
	case code == "NoSuchKey" || code == "NotFound":
		kind = largo.ErrNotFound
	case code == "AccessDenied" || code == "AllAccessDisabled":
		kind = largo.ErrPermission
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		kind = largo.ErrPrecondition
	case code == "NoSuchBucket":
		// The configured bucket vanished: the server's fault, not the
		// client's, so no kind (a 500 that is logged).
		return fmt.Errorf("%s: bucket gone: %w", name, err)
	case credentialCodes[code]:
		// Credentials that stopped working: the server's fault, a 500.
		return fmt.Errorf("%s: credentials refused: %w", name, err)
	case status == http.StatusNotFound:
		kind = largo.ErrNotFound
	case status == http.StatusForbidden:
		kind = largo.ErrPermission
	default:
		return fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Errorf("%s: %w: %w", name, kind, err)
}

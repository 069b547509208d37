package s3api

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"

	"largo"
	"largo/auth"
	"largo/wire"
)

// Error is a refusal in S3's terms: the code a client's SDK acts on, the
// status, and a one-line message. Wrap it with %w to keep a cause for the
// log; the client sees only the code and the message.
type Error struct {
	Code    string
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func refuse(status int, code, msg string) *Error {
	return &Error{Code: code, Status: status, Message: msg}
}

// The refusals of the S3 front end itself: its grammar and its
// signatures. What the store, the gate and the write pipeline refuse is
// mapped from largo's error kinds by kinds, below.
var (
	errSignature      = refuse(http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	errUnknownKey     = refuse(http.StatusForbidden, "InvalidAccessKeyId", "The AWS access key Id you provided does not exist in our records.")
	errSkewed         = refuse(http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the server's time is too large (more than 15 minutes).")
	errExpired        = refuse(http.StatusForbidden, "AccessDenied", "Request has expired")
	errAuthHeader     = refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed", "The authorization header is malformed: it needs Credential, SignedHeaders and Signature of AWS4-HMAC-SHA256, with host among the signed headers.")
	errAuthQuery      = refuse(http.StatusBadRequest, "AuthorizationQueryParametersError", "X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires (1 to 604800 seconds), X-Amz-SignedHeaders and X-Amz-Signature are required, with host among the signed headers.")
	errSigV2          = refuse(http.StatusBadRequest, "InvalidRequest", "Only AWS Signature Version 4 (AWS4-HMAC-SHA256) is supported.")
	errNoDate         = refuse(http.StatusForbidden, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header.")
	errContentSHA     = refuse(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
	errBadContentSHA  = refuse(http.StatusBadRequest, "InvalidArgument", "x-amz-content-sha256 must be the hex SHA-256 of the payload, UNSIGNED-PAYLOAD or one of the STREAMING- values.")
	errNeedSHA        = refuse(http.StatusBadRequest, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256.")
	errTooMany        = refuse(http.StatusServiceUnavailable, "SlowDown", "Too many failed signatures from this client: reduce your request rate.")
	errBusyKeys       = refuse(http.StatusServiceUnavailable, "SlowDown", "Busy checking credentials: reduce your request rate.")
	errChunk          = refuse(http.StatusBadRequest, "IncompleteBody", "The aws-chunked body is malformed or ends early.")
	errChunkSig       = refuse(http.StatusForbidden, "SignatureDoesNotMatch", "A chunk signature of the aws-chunked body does not match.")
	errTrailer        = refuse(http.StatusBadRequest, "MalformedTrailerError", "The trailer of the aws-chunked body is malformed, or lacks what x-amz-trailer announced.")
	errDecodedLength  = refuse(http.StatusBadRequest, "IncompleteBody", "The body's length differs from x-amz-decoded-content-length.")
	errNeedLength     = refuse(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header (or x-amz-decoded-content-length for an aws-chunked body).")
	errBadDigest      = refuse(http.StatusBadRequest, "BadDigest", "The Content-MD5 or checksum you specified did not match what we received.")
	errBadMD5         = refuse(http.StatusBadRequest, "InvalidDigest", "The Content-MD5 you specified is not valid.")
	errBadChecksum    = refuse(http.StatusBadRequest, "InvalidRequest", "Give at most one checksum, x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1 or -sha256, as base64 of its value.")
	errNoSuchBucket   = refuse(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist.")
	errNoSuchKey      = refuse(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
	errNoSuchUpload   = refuse(http.StatusNotFound, "NoSuchUpload", "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
	errInvalidKey     = refuse(http.StatusBadRequest, "InvalidArgument", "The key is not a valid name here: no empty, '.' or '..' segment, no control character or backslash, at most 4096 bytes.")
	errMetaTooLarge   = refuse(http.StatusBadRequest, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (2 KB).")
	errDelimiter      = refuse(http.StatusNotImplemented, "NotImplemented", "Only '/' is supported as a delimiter.")
	errToken          = refuse(http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect.")
	errEncodingType   = refuse(http.StatusBadRequest, "InvalidArgument", "Invalid Encoding Method specified in Request: only url.")
	errMalformedXML   = refuse(http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
	errTooManyKeys    = refuse(http.StatusBadRequest, "MalformedXML", "A DeleteObjects request names at most 1000 keys.")
	errCopySource     = refuse(http.StatusBadRequest, "InvalidArgument", "x-amz-copy-source must be /bucket/key, URL-encoded, without a versionId.")
	errCopySelf       = refuse(http.StatusBadRequest, "InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata.")
	errCopyRange      = refuse(http.StatusBadRequest, "InvalidArgument", "x-amz-copy-source-range must be bytes=first-last within the source object.")
	errDirective      = refuse(http.StatusBadRequest, "InvalidArgument", "x-amz-metadata-directive must be COPY or REPLACE.")
	errRange          = refuse(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable.")
	errNotModified    = &Error{Code: "NotModified", Status: http.StatusNotModified}
	errBucketOwned    = refuse(http.StatusConflict, "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.")
	errOneBucket      = refuse(http.StatusNotImplemented, "NotImplemented", "This server serves one bucket; it makes and removes no other.")
	errPartNumber     = refuse(http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.")
	errPartNumberRead = refuse(http.StatusRequestedRangeNotSatisfiable, "InvalidPartNumber", "The requested partnumber is not satisfiable: every object here is one part.")
	errInvalidPart    = refuse(http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
	errPartOrder      = refuse(http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.")
	errTooSmall       = refuse(http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size: each part but the last must be at least 5 MiB.")
	errPartTooLarge   = refuse(http.StatusBadRequest, "EntityTooLarge", "A part may hold at most 5 GiB.")
	errNoParts        = refuse(http.StatusBadRequest, "MalformedXML", "CompleteMultipartUpload lists no part, or more than 10000.")
	errAllParts       = refuse(http.StatusBadRequest, "InvalidPart", "On this server's bucket store, CompleteMultipartUpload must list every part uploaded.")
	errBadRequest     = refuse(http.StatusBadRequest, "InvalidRequest", "The request is not valid here.")
	errNotAllowed     = refuse(http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.")
	errReadOnly       = refuse(http.StatusForbidden, "AccessDenied", "This server takes no writes.")
)

// notImplemented is the refusal of an operation or a subresource the
// front end does not serve.
func notImplemented(what string) *Error {
	return refuse(http.StatusNotImplemented, "NotImplemented", what+" is not implemented by this server.")
}

// kinds is the one table from largo's error kinds (what the gate, the
// write pipeline and the store refuse with) to S3's codes and statuses.
// The first match wins. A status of 0 takes the status of wire.Status,
// the table every protocol shares.
var kinds = []struct {
	err    error
	code   string
	status int
}{
	{auth.ErrTooManyFailures, "SlowDown", http.StatusServiceUnavailable},
	{largo.ErrReservedName, "AccessDenied", http.StatusForbidden},
	{largo.ErrUnauthorized, "AccessDenied", http.StatusForbidden}, // S3 has no 401
	{largo.ErrCreateOnly, "AccessDenied", http.StatusForbidden},
	{largo.ErrPermission, "AccessDenied", http.StatusForbidden},
	{largo.ErrLocked, "OperationAborted", http.StatusConflict},
	{largo.ErrChanged, "OperationAborted", http.StatusConflict},
	{largo.ErrMissingFolder, "InvalidArgument", http.StatusConflict},
	{largo.ErrParentNotDir, "InvalidArgument", http.StatusConflict},
	{largo.ErrInvalidName, "InvalidArgument", http.StatusBadRequest},
	{largo.ErrUnsafeName, "InvalidArgument", http.StatusBadRequest},
	{largo.ErrIsDir, "InvalidArgument", http.StatusConflict},
	{largo.ErrNotFound, "NoSuchKey", http.StatusNotFound},
	{largo.ErrNotDir, "NoSuchKey", http.StatusNotFound},
	{largo.ErrSidecarName, "AccessDenied", http.StatusForbidden},
	{largo.ErrExist, "PreconditionFailed", http.StatusPreconditionFailed},
	{largo.ErrNotEmpty, "InvalidArgument", http.StatusConflict},
	{largo.ErrPrecondition, "PreconditionFailed", http.StatusPreconditionFailed},
	{largo.ErrTooLarge, "EntityTooLarge", http.StatusBadRequest},
	{largo.ErrNoSpace, "InsufficientStorage", http.StatusInsufficientStorage},
	{largo.ErrDigest, "BadDigest", http.StatusBadRequest},
	{largo.ErrCondUnsupported, "NotImplemented", http.StatusNotImplemented},
	{largo.ErrUnsupported, "NotImplemented", http.StatusNotImplemented},
	{largo.ErrBusy, "SlowDown", http.StatusServiceUnavailable},
	{largo.ErrBodyTimeout, "RequestTimeout", http.StatusBadRequest},
	{largo.ErrBodyIncomplete, "IncompleteBody", http.StatusBadRequest},
	{context.DeadlineExceeded, "RequestTimeout", http.StatusBadRequest},
}

// codeOfStatus names the S3 code of a refusal that carries only a status
// (a wire.StatusError: the pre-upload hook's, a listing's budget).
func codeOfStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "InvalidRequest"
	case http.StatusUnauthorized, http.StatusForbidden:
		return "AccessDenied"
	case http.StatusNotFound:
		return "NoSuchKey"
	case http.StatusConflict:
		return "OperationAborted"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusRequestEntityTooLarge:
		return "EntityTooLarge"
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return "SlowDown"
	case http.StatusNotImplemented:
		return "NotImplemented"
	}
	if status >= 500 {
		return "InternalError"
	}
	return "InvalidRequest"
}

// toError returns err in S3's terms. The message a client sees is the
// fixed phrase of the kind (or a quota's, which names no path), never
// err's own text, which may hold local paths.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var se *wire.StatusError
	if errors.As(err, &se) {
		return refuse(statusOf(se.Code), codeOfStatus(se.Code), se.Reason)
	}
	status, reason := wire.Status(err)
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			if k.status != 0 {
				status = k.status
			}
			return refuse(status, k.code, reason)
		}
	}
	return refuse(status, codeOfStatus(status), reason)
}

// statusOf is the status an S3 client is answered with for a status of
// the shared table: 401 is 403 in S3.
func statusOf(code int) int {
	if code == http.StatusUnauthorized {
		return http.StatusForbidden
	}
	return code
}

// errorBody is S3's error document.
type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId"`
}

// writeError answers e: its status, and for a request that may have a
// body its XML document.
func writeError(w http.ResponseWriter, r *http.Request, e *Error) {
	hdr := w.Header()
	if e.Status == http.StatusNotModified {
		w.WriteHeader(e.Status) // with the validators set
		return
	}
	for _, k := range []string{"ETag", "Last-Modified", "Content-Range", "Accept-Ranges", "Repr-Digest"} {
		hdr.Del(k)
	}
	if e.Status == http.StatusServiceUnavailable {
		hdr.Set("Retry-After", "1")
	}
	hdr.Set("Content-Type", "application/xml")
	if r.Method == http.MethodHead {
		hdr.Set("x-amz-error-code", e.Code)
		w.WriteHeader(e.Status)
		return
	}
	b, _ := xml.Marshal(errorBody{Code: e.Code, Message: e.Message, Resource: r.URL.Path, RequestID: hdr.Get(requestIDHeader)})
	hdr.Set("Content-Length", fmt.Sprint(len(xml.Header)+len(b)))
	w.WriteHeader(e.Status)
	w.Write([]byte(xml.Header))
	w.Write(b)
}

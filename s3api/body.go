package s3api

import (
	"io"
	"net/http"
	"strconv"
	"strings"
)

// payload is a write's body as the request frames and signs it.
type payload struct {
	*checked
	// size is the payload's length: Content-Length, or for an
	// aws-chunked body x-amz-decoded-content-length; -1 when not known.
	size int64
}

// bodyOf returns r's payload: decoded from aws-chunked when it is framed
// so (its chunks' signatures checked as they come), and checked at its
// end against what the request says it hashes to. With ownSHA the
// caller compares the payload's SHA-256 (SHA256Mismatch); with etag the
// MD5 is computed for an ETag. Nothing of the body is read here.
func bodyOf(r *http.Request, ownSHA, etag bool) (payload, error) {
	sig := signatureOf(r)
	how := r.Header.Get("X-Amz-Content-Sha256")
	if sig != nil {
		how = sig.payload
	} else if how == "" {
		how = unsignedPayload
	}
	chunkedBody := how == streamingSigned || how == streamingSignedTrailer || how == streamingUnsigned || awsChunked(r.Header)
	var trailer []string
	if v := r.Header.Get("X-Amz-Trailer"); v != "" {
		if !chunkedBody {
			return payload{}, errTrailer
		}
		for t := range strings.SplitSeq(v, ",") {
			trailer = append(trailer, strings.ToLower(strings.TrimSpace(t)))
		}
	}
	e, err := expectOf(r, how, trailer)
	if err != nil {
		return payload{}, err
	}
	var body io.Reader = r.Body
	if body == nil {
		body = http.NoBody
	}
	if !chunkedBody {
		return payload{checked: newChecked(body, e, nil, ownSHA, etag), size: r.ContentLength}, nil
	}
	n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return payload{}, errNeedLength
	}
	var chunkSig *signature
	switch how {
	case streamingSigned, streamingSignedTrailer:
		if sig == nil {
			return payload{}, errSignature // signed chunks need a signed request
		}
		chunkSig = sig
		if (how == streamingSignedTrailer) != (trailer != nil) {
			return payload{}, errTrailer
		}
	}
	if e.sha256 != nil {
		return payload{}, errBadContentSHA // a hash of the framed body is no hash of the payload
	}
	c := newChunked(body, n, chunkSig, trailer, how == streamingSignedTrailer)
	return payload{checked: newChecked(c, e, c, ownSHA, etag), size: n}, nil
}

// awsChunked reports whether a request's Content-Encoding names
// aws-chunked.
func awsChunked(h http.Header) bool {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(c), "aws-chunked") {
				return true
			}
		}
	}
	return false
}

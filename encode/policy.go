package encode

import (
	"strings"
)

// MinSize is the smallest file worth compressing: below it the saving is
// a few hundred bytes at best, and the coding's own framing eats into it.
const MinSize = 1024

// compressibleTypes are the media types, besides text/* and the +json and
// +xml suffixes, whose content compresses well.
var compressibleTypes = map[string]bool{
	"application/json":              true,
	"application/jsonl":             true,
	"application/x-ndjson":          true,
	"application/ndjson":            true,
	"application/javascript":        true,
	"application/x-javascript":      true,
	"application/ecmascript":        true,
	"application/xml":               true,
	"application/wasm":              true,
	"application/yaml":              true,
	"application/x-yaml":            true,
	"application/toml":              true,
	"application/sql":               true,
	"application/x-sh":              true,
	"application/graphql":           true,
	"application/rtf":               true,
	"application/x-tex":             true,
	"application/vnd.ms-fontobject": true,
	"font/ttf":                      true,
	"font/otf":                      true,
	"font/collection":               true,
	"application/x-font-ttf":        true,
	"application/x-font-otf":        true,
	"image/svg+xml":                 true,
}

// Compressible reports whether content of the media type mediaType (a
// Content-Type value; parameters are ignored) is worth compressing: text/*,
// JSON and NDJSON, JavaScript, CSS, SVG, XML and the +json and +xml types,
// CSV, logs, WASM, YAML, TOML, SQL, shell scripts and uncompressed fonts
// (TTF, OTF). Everything else is sent as it is: archives and compressed
// files (zip, gzip, zstd, xz, 7z, rar), images other than SVG, audio,
// video, WOFF fonts, PDF, and
// unknown binary data (application/octet-stream), which is most often
// compressed already.
func Compressible(mediaType string) bool {
	mt, _, _ := strings.Cut(mediaType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch {
	case mt == "":
		return false
	case strings.HasPrefix(mt, "text/"):
		return true
	case strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	return compressibleTypes[mt]
}

// Request is what the policy needs to know of a request.
type Request struct {
	// Accept is the parsed Accept-Encoding.
	Accept Accept
	// Range reports a Range header that the server will honour.
	Range bool
	// IfRange is the If-Range header, "" when absent.
	IfRange string
}

// Offer is what the server has to offer for one file.
type Offer struct {
	// MediaType is the file's Content-Type.
	MediaType string
	// Size is the file's length in bytes.
	Size int64
	// Sidecar reports whether a fresh precompressed sidecar of the file
	// exists in coding c, and its ETag. It is called at most once per
	// coding, in the order the client prefers, and only when the policy
	// would use the answer; nil means no sidecars.
	Sidecar func(c Coding) (etag string, ok bool)
	// Dynamic reports that dynamic compression is enabled.
	Dynamic bool
}

// Choice is the policy's answer for one response.
type Choice struct {
	// Coding is the representation to send: Identity, or a coding.
	Coding Coding
	// Sidecar reports that Coding is to be served from its sidecar;
	// otherwise a coding other than Identity means dynamic compression.
	Sidecar bool
	// Vary reports that the answer depends on Accept-Encoding, so the
	// response must carry "Vary: Accept-Encoding".
	Vary bool
}

// Choose decides how to send a file, by these rules in order:
//
//  1. Types that do not compress (see Compressible) and files under
//     MinSize: identity, and the response does not vary.
//  2. A fresh sidecar in a coding the client accepts wins, the client's
//     most wanted first: it costs no CPU and is compressed at the best
//     level. It is also sent for a Range request, but only when If-Range
//     names that sidecar's ETag: then the client is resuming that encoded
//     representation and its byte offsets are offsets into it.
//  3. Otherwise a Range request gets identity, so that byte offsets mean
//     what a client that decodes as it saves (curl -C - --compressed)
//     thinks they mean.
//  4. Otherwise, with dynamic compression on, the coding the client wants
//     most.
//  5. Otherwise identity. A client that refuses identity ("identity;q=0")
//     and accepts nothing the server can send gets identity all the same,
//     as RFC 9110 12.1 allows a server to disregard the header, rather
//     than a 406 for a file it can read.
func Choose(req Request, o Offer) Choice {
	if o.Size < MinSize || !Compressible(o.MediaType) {
		return Choice{Coding: Identity}
	}
	ch := Choice{Coding: Identity, Vary: true}
	rank := req.Accept.Rank()
	// A Range request can only be tied to a sidecar by a strong ETag.
	if o.Sidecar != nil && (!req.Range || strings.HasPrefix(req.IfRange, `"`)) {
		for _, c := range rank {
			etag, ok := o.Sidecar(c)
			if !ok {
				continue
			}
			if req.Range && req.IfRange != etag {
				continue
			}
			ch.Coding, ch.Sidecar = c, true
			return ch
		}
	}
	if req.Range || !o.Dynamic || len(rank) == 0 {
		return ch
	}
	ch.Coding = rank[0]
	return ch
}

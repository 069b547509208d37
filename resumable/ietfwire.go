package resumable

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"largo/wire"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
)

// The IETF draft has moved under its implementations: each revision that
// changed the wire raised an interop version, which clients send in
// Upload-Draft-Interop-Version and a server must match before it sends a
// 104. The versions differ here in three ways only, each a method of
// version below; everything else is the latest text (draft -12).
//
//	version  drafts      completeness        append type           Upload-Limit
//	3        -01         Upload-Incomplete   any                   none
//	4        -02         Upload-Complete     any                   none
//	5        -03         Upload-Complete     any                   none
//	6        -04, -05    Upload-Complete     partial-upload        expires=
//	7        -06 to -08  Upload-Complete     partial-upload        max-age=
//	8        -09 to -11  Upload-Complete     partial-upload        max-age=
//	9        -12         Upload-Complete     partial-upload        max-age=
//
// A later version, if configured, is spoken as 9.
//
// One more difference is largo's own: in versions 3 to 6, the drafts that
// tusd and tus-js-client implement, an upload whose offset reaches the
// length its client declared is complete, as tusd makes it, although the
// drafts ask for the client's Upload-Complete: ?1. tus-js-client (4.x)
// sends the last chunk of a file with Upload-Complete: ?0 and counts the
// upload done when the offset reaches the length: without this, its
// uploads would never be placed. From version 7 on, only the client
// completes an upload.

// version is an interop version of the draft.
type version int

// latest is the version whose text the front end follows.
const latest version = 9

// DefaultVersions returns the interop versions the front end speaks
// unless told otherwise: every version whose wire behaviour it implements
// and is tested with (see the table above).
func DefaultVersions() []int { return []int{3, 4, 5, 6, 7, 8, 9} }

func (v version) String() string { return strconv.Itoa(int(v)) }

// setComplete states an upload's completeness in v's field.
func (v version) setComplete(hdr http.Header, complete bool) {
	if v == 3 {
		hdr.Set("Upload-Incomplete", wire.FormatBoolItem(!complete))
		return
	}
	hdr.Set("Upload-Complete", wire.FormatBoolItem(complete))
}

// complete reads the completeness an append states. Version 3 leaves the
// field out on the last append; later versions require it, and a request
// without it is taken as not the last (nothing is placed that the client
// did not say was whole). A field that is no Boolean is refused
// (completeness).
func (v version) complete(hdr http.Header) (bool, error) {
	complete, stated, err := completeness(hdr)
	if err != nil || !stated {
		return v == 3 && err == nil, err
	}
	return complete, nil
}

// completeness reads the completeness a request states: Upload-Complete,
// or its inverse Upload-Incomplete (interop version 3); stated is false
// when it sends neither. A field of another value than a Boolean (?1,
// ?0) is refused with errCompleteValue, where the draft has it ignored: a
// request that means to say something of its completeness and cannot be
// understood would otherwise become a plain write, storing what may be a
// part as the whole file.
func completeness(hdr http.Header) (complete, stated bool, err error) {
	if v := hdr.Values("Upload-Complete"); len(v) > 0 {
		b, ok := wire.ParseBoolItem(strings.Join(v, ","))
		if !ok {
			return false, true, errCompleteValue
		}
		return b, true, nil
	}
	if v := hdr.Values("Upload-Incomplete"); len(v) > 0 {
		b, ok := wire.ParseBoolItem(strings.Join(v, ","))
		if !ok {
			return false, true, errCompleteValue
		}
		return !b, true, nil
	}
	return false, false, nil
}

// lengthField reads Upload-Length: -1 when it is not sent. A value that is
// no non-negative integer is refused with errLengthValue, where the draft
// has it ignored, as tus refuses one: a client that states a length it
// cannot have would otherwise see its upload taken as one of unknown
// length. An integer of more digits than a structured field's Integer
// holds (15) is read as the length it says (the largest the server can
// hold where it says more), for the size limit and the free space to
// judge, as they judge any other.
func lengthField(hdr http.Header) (int64, error) {
	vs := hdr.Values("Upload-Length")
	if len(vs) == 0 {
		return -1, nil
	}
	v := strings.Join(vs, ",")
	if n, ok := wire.ParseIntegerItem(v); ok {
		return n, nil
	}
	digits := strings.Trim(v, " \t")
	if len(digits) <= 15 || strings.Trim(digits, "0123456789") != "" {
		return -1, errLengthValue
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		n = math.MaxInt64 // more than any store holds
	}
	return n, nil
}

// completesAtLength reports whether an upload is complete once its offset
// reaches a declared length (see above).
func (v version) completesAtLength() bool { return v < 7 }

// typedAppends reports whether an append must be application/partial-upload.
func (v version) typedAppends() bool { return v >= 6 }

// limitsField returns the Upload-Limit field for a maximum size (0: none)
// and a remaining lifetime, in v's keys, or "" when v has no such field.
func (v version) limitsField(maxSize int64, age time.Duration) string {
	if v < 6 {
		return ""
	}
	key := "max-age"
	if v == 6 {
		key = "expires"
	}
	f := fmt.Sprintf("%s=%d", key, max(int64(age/time.Second), 0))
	if maxSize > 0 {
		f = fmt.Sprintf("max-size=%d, %s", maxSize, f)
	}
	return f
}

// integerField reads a non-negative Integer field; ok is false when it is
// missing or of another value (which the draft says to ignore).
func integerField(hdr http.Header, name string) (int64, bool) {
	v := hdr.Values(name)
	if len(v) == 0 {
		return 0, false
	}
	return wire.ParseIntegerItem(strings.Join(v, ","))
}

// Problem types of the draft (RFC 9457).
const (
	problemOffset    = "mismatching-upload-offset"
	problemLength    = "inconsistent-upload-length"
	problemCompleted = "completed-upload"
)

// problem is a refusal of the protocol itself, answered with an RFC 9457
// problem document of one of the draft's types and the fields that let
// the client go on (the right Upload-Offset, the completeness).
type problem struct {
	code   int
	kind   string // the problem type's fragment
	title  string
	hdr    http.Header
	values map[string]int64 // the type's extension members
}

func (p *problem) Error() string { return p.title }

// body returns the problem document.
func (p *problem) body() []byte {
	doc := map[string]any{
		"type":  "https://iana.org/assignments/http-problem-types#" + p.kind,
		"title": p.title,
	}
	for k, v := range p.values {
		doc[k] = v
	}
	b, _ := json.Marshal(doc)
	return append(b, '\n')
}

// offsetMismatch is the 409 of an append at another offset than the
// upload's.
func offsetMismatch(v version, expected, provided int64) *problem {
	hdr := http.Header{"Upload-Offset": {strconv.FormatInt(expected, 10)}}
	v.setComplete(hdr, false)
	return &problem{
		code: http.StatusConflict, kind: problemOffset, hdr: hdr,
		title:  fmt.Sprintf("the upload is at offset %d, not %d", expected, provided),
		values: map[string]int64{"expected-offset": expected, "provided-offset": provided},
	}
}

// lengthMismatch is the 400 of a request whose lengths disagree with each
// other or with the upload's.
func lengthMismatch(v version, why string) *problem {
	hdr := http.Header{}
	v.setComplete(hdr, false)
	return &problem{code: http.StatusBadRequest, kind: problemLength, hdr: hdr, title: "inconsistent upload length: " + why}
}

// completedAppend is the 400 of bytes sent to an upload that is complete.
func completedAppend(v version) *problem {
	hdr := http.Header{}
	v.setComplete(hdr, true)
	return &problem{code: http.StatusBadRequest, kind: problemCompleted, hdr: hdr, title: "the upload is complete: it takes no more bytes"}
}

// Refusals of the IETF front end that are no store's.
var (
	errNoUpload      = fmt.Errorf("no such upload (cancelled, expired, or never made): %w", largo.ErrNotFound)
	errNoFilename    = wire.Refuse(http.StatusBadRequest, "a POST to a folder names its file: Content-Disposition with a filename, or Upload-Metadata with filename")
	errNoOffset      = wire.Refuse(http.StatusBadRequest, "an append needs Upload-Offset")
	errAppendType    = wire.Refuse(http.StatusUnsupportedMediaType, "an append is Content-Type: application/partial-upload")
	errStateFields   = wire.Refuse(http.StatusBadRequest, "an offset retrieval carries no Upload-Offset, Upload-Complete or Upload-Length")
	errCompleteValue = wire.Refuse(http.StatusBadRequest, "Upload-Complete (Upload-Incomplete) must be a Boolean: ?1 or ?0")
	errLengthValue   = wire.Refuse(http.StatusBadRequest, "Upload-Length must be a non-negative integer")
	errUploadMethod  = errors.New("method not allowed on an upload resource")
)

// statusOf returns the status and reason of an error: a tus error made by
// the staging keeps its own (its cause was logged when it was made),
// anything else is the pipeline's table.
func statusOf(err error) (int, string) {
	var te tusd.Error
	if errors.As(err, &te) {
		return te.HTTPResponse.StatusCode, te.Message
	}
	return wire.Status(err)
}

// plain turns a staging's tus error into an error the pipeline's table
// answers with the same status and reason, for the front end that owns
// the request (package serve).
func plain(err error) error {
	var te tusd.Error
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %w", wire.Refuse(te.HTTPResponse.StatusCode, te.Message), err)
	}
	return err
}

// fail answers err: a problem document for the protocol's own refusals,
// else the status and one-line reason of the table, with the cause of a
// server failure logged.
func (x *IETF) fail(w http.ResponseWriter, r *http.Request, err error) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	var p *problem
	if errors.As(err, &p) {
		for k, v := range p.hdr {
			hdr[k] = v
		}
		hdr.Set("Content-Type", "application/problem+json")
		w.WriteHeader(p.code)
		w.Write(p.body())
		return
	}
	code, reason := statusOf(err)
	var te tusd.Error
	if level, ok := wire.Level(code); ok && !errors.As(err, &te) {
		x.h.log.Log(r.Context(), level, "resumable upload failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	}
	var de *largo.DigestError
	if errors.As(err, &de) {
		hdr.Set("Repr-Digest", wire.FormatDigest(de.SHA256))
	}
	if errors.Is(err, errUploadMethod) {
		code, reason = http.StatusMethodNotAllowed, "method not allowed"
		hdr.Set("Allow", uploadMethods)
	}
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	w.Write([]byte(reason + "\n"))
}

package wire

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"largo"
)

// Condition reads a write's If-None-Match and If-Match. Only the forms a
// write can apply atomically are accepted (ErrBadCondition otherwise):
// If-None-Match: * and a single strong ETag, or *, in If-Match.
func Condition(h http.Header) (largo.Condition, error) {
	var c largo.Condition
	if v := strings.TrimSpace(h.Get("If-None-Match")); v != "" {
		if v != "*" {
			return c, fmt.Errorf("If-None-Match %q: %w: only * is supported on writes", v, ErrBadCondition)
		}
		c.IfNoneMatch = true
	}
	if v := strings.TrimSpace(h.Get("If-Match")); v != "" {
		if v != "*" && (strings.Contains(v, ",") || len(v) < 2 || !strings.HasPrefix(v, `"`) || !strings.HasSuffix(v, `"`)) {
			return c, fmt.Errorf("If-Match %q: %w: one strong ETag or * is supported", v, ErrBadCondition)
		}
		c.IfMatch = v
	}
	return c, nil
}

// UnmodifiedSince returns the date of a write's If-Unmodified-Since
// (RFC 9110, 13.1.4), and whether it is to be evaluated: only without an
// If-Match, and only when it is a valid HTTP-date (an invalid one is
// ignored, as the RFC says).
func UnmodifiedSince(h http.Header) (time.Time, bool) {
	v := h.Get("If-Unmodified-Since")
	if v == "" || h.Get("If-Match") != "" {
		return time.Time{}, false
	}
	since, err := http.ParseTime(v)
	return since, err == nil
}

// Digest returns the SHA-256 a write must have according to its
// Content-Digest and Repr-Digest fields (RFC 9530), or nil when neither
// names sha-256. largo stores the bytes it receives as they are, so both
// fields describe the same bytes; when both are sent they must agree.
// Other algorithms are ignored, as RFC 9530 allows. Errors wrap
// ErrBadDigest.
func Digest(h http.Header) ([]byte, error) {
	var want []byte
	for _, field := range []string{"Content-Digest", "Repr-Digest"} {
		v := strings.Join(h.Values(field), ",")
		if v == "" {
			continue
		}
		sum, err := ParseDigest(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if sum == nil {
			continue
		}
		if want != nil && string(want) != string(sum) {
			return nil, fmt.Errorf("Content-Digest and Repr-Digest disagree: %w", ErrBadDigest)
		}
		want = sum
	}
	return want, nil
}

// UploadComplete reads whether a request of the resumable-upload protocol
// (draft-ietf-httpbis-resumable-upload) carries the end of its file:
// Upload-Complete, or, in the draft's interop version 3, its inverse
// Upload-Incomplete. stated is false when neither field holds a Boolean
// (a field of another value is ignored, as the draft asks).
func UploadComplete(h http.Header) (complete, stated bool) {
	if v := h.Values("Upload-Complete"); len(v) > 0 {
		return ParseBoolItem(strings.Join(v, ","))
	}
	if v := h.Values("Upload-Incomplete"); len(v) > 0 {
		incomplete, ok := ParseBoolItem(strings.Join(v, ","))
		return ok && !incomplete, ok
	}
	return false, false
}

// Incomplete reports whether a request says its body is not the whole
// file (Upload-Complete: ?0, Upload-Incomplete: ?1): a write front end
// that does not make it resumable must refuse it, never store the part as
// the whole.
func Incomplete(h http.Header) bool {
	complete, stated := UploadComplete(h)
	return stated && !complete
}

// LockTokens returns the lock tokens a request's If header presents (RFC
// 4918, 10.4): the Coded-URLs inside its parenthesised lists, without the
// resource tags that may stand before a list and without the negated
// ones ("Not <token>" presents no lock). Only the tokens are read; the
// rest of the header (entity tags) is the WebDAV handler's.
func LockTokens(h http.Header) []string {
	var tokens []string
	for _, v := range h.Values("If") {
		depth, not := 0, false
		for i := 0; i < len(v); i++ {
			switch v[i] {
			case '(':
				depth++
			case ')':
				depth = max(depth-1, 0)
			case 'N', 'n':
				not = depth > 0 && len(v) >= i+3 && strings.EqualFold(v[i:i+3], "not")
				if not {
					i += 2
				}
			case '[': // an entity tag, which may hold '<'
				if j := strings.IndexByte(v[i:], ']'); j > 0 {
					i += j
				}
			case '<':
				j := strings.IndexByte(v[i:], '>')
				if j < 0 {
					return tokens
				}
				if tok := v[i+1 : i+j]; depth > 0 && tok != "" && !not && !strings.Contains(tok, "<") {
					tokens = append(tokens, tok)
				}
				not = false
				i += j
			}
		}
	}
	return tokens
}

// ErrBadIf: an If header that is not the grammar of RFC 4918 (10.4).
var ErrBadIf = Refuse(http.StatusBadRequest, "malformed If header: lists of (<state-token>) or ([etag]), each optionally after <resource>")

// CheckIf checks that a request's If header, if any, follows the grammar
// of RFC 4918 (10.4): tagged lists (a resource, then lists) or untagged
// ones, each list a parenthesised run of conditions, each condition an
// optional Not and a Coded-URL or an entity tag in brackets. A write that
// reads lock tokens out of a malformed header would read what its client
// did not mean.
func CheckIf(h http.Header) error {
	vs := h.Values("If")
	if len(vs) == 0 {
		return nil
	}
	v := strings.Join(vs, " ")
	tagged, lists := -1, 0 // tagged: unknown, then 0 or 1
	expectList := false    // a resource tag was just read
	for i := skipSpace(v, 0); i < len(v); i = skipSpace(v, i) {
		switch v[i] {
		case '<':
			if tagged == 0 || expectList {
				return ErrBadIf
			}
			tagged = 1
			j := strings.IndexByte(v[i:], '>')
			if j < 2 {
				return ErrBadIf
			}
			i += j + 1
			expectList = true
		case '(':
			if tagged < 0 {
				tagged = 0
			}
			j, err := ifList(v, i+1)
			if err != nil {
				return err
			}
			i, lists, expectList = j, lists+1, false
		default:
			return ErrBadIf
		}
	}
	if lists == 0 || expectList {
		return ErrBadIf
	}
	return nil
}

// ifList checks the conditions of a list from i, just past its "(", and
// returns the index past its ")".
func ifList(v string, i int) (int, error) {
	n := 0
	for i = skipSpace(v, i); i < len(v); i = skipSpace(v, i) {
		if v[i] == ')' {
			if n == 0 {
				return 0, ErrBadIf
			}
			return i + 1, nil
		}
		if len(v)-i >= 3 && strings.EqualFold(v[i:i+3], "not") {
			i = skipSpace(v, i+3)
			if i >= len(v) {
				return 0, ErrBadIf
			}
		}
		var end byte
		switch v[i] {
		case '<':
			end = '>'
		case '[':
			end = ']'
		default:
			return 0, ErrBadIf
		}
		j := strings.IndexByte(v[i+1:], end)
		if j < 1 || strings.ContainsAny(v[i+1:i+1+j], "<>()") && end == '>' {
			return 0, ErrBadIf
		}
		i += j + 2
		n++
	}
	return 0, ErrBadIf
}

func skipSpace(v string, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

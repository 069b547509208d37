package wire

import "strings"

// The fields of resumable uploads (draft-ietf-httpbis-resumable-upload:
// Upload-Complete, Upload-Offset, Upload-Length, and the interop version)
// are structured-field Items (RFC 9651): a bare value, then parameters
// that say nothing here. A field whose value breaks the syntax is ignored,
// as the draft asks, so the parsers report ok false rather than an error.
// A field sent on several lines is joined with commas, which no Item may
// hold.

// ParseBoolItem reads a structured-field Boolean Item: "?1" is true, "?0"
// false; ok is false for anything else.
func ParseBoolItem(v string) (b, ok bool) {
	bare, ok := bareItem(v)
	switch {
	case !ok:
		return false, false
	case bare == "?1":
		return true, true
	case bare == "?0":
		return false, true
	}
	return false, false
}

// ParseIntegerItem reads a non-negative structured-field Integer Item (at
// most 15 digits); ok is false for anything else.
func ParseIntegerItem(v string) (n int64, ok bool) {
	bare, ok := bareItem(v)
	if !ok || bare == "" || len(bare) > 15 {
		return 0, false
	}
	for _, c := range []byte(bare) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// bareItem returns an Item's bare value, without its parameters, which
// are only checked to be of the form ;key or ;key=value. Spaces around the
// whole value are allowed, none inside the bare value. A comma (a field
// sent twice, or a list) makes it no Item.
func bareItem(v string) (string, bool) {
	v = strings.Trim(v, " \t")
	bare, params, _ := strings.Cut(v, ";")
	if bare == "" || strings.ContainsAny(bare, " \t") || strings.Contains(v, ",") {
		return "", false
	}
	if params != "" || strings.HasSuffix(v, ";") {
		for p := range strings.SplitSeq(params, ";") {
			key, _, _ := strings.Cut(strings.TrimLeft(p, " "), "=")
			if key == "" || strings.ContainsAny(key, " \t\"") || key[0] < 'a' || key[0] > 'z' && key[0] != '*' {
				return "", false
			}
		}
	}
	return bare, true
}

// FormatBoolItem writes a Boolean as a structured-field Item.
func FormatBoolItem(b bool) string {
	if b {
		return "?1"
	}
	return "?0"
}

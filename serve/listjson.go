package serve

import (
	"bufio"
	"iter"
	"strconv"
	"time"
	"unicode/utf8"

	"largo"
)

// The JSON listing is written by hand, entry by entry, into the
// response's buffered writer: a folder of a million files is a hundred
// megabytes of JSON, and encoding/json would cost a reflection walk and
// an allocation per entry, for a shape that never changes.
//
// The listing is compact, with one entry per line:
//
//	{"path":"/docs/","entries":[
//	{"name":"a.txt","dir":false,"size":12,"modified":"2025-03-14T15:09:26.123456789Z","etag":"\"e1\""},
//	{"name":"sub","dir":true,"size":0,"modified":"2025-03-14T15:09:26Z"}
//	]}
//
// A line per entry costs a byte and keeps the listing readable with
// line tools (grep, head); indentation cost a third of the bytes. The
// fields are those of Entry, in its order, with its omissions: no
// "modified" for a zero time (a bucket's folders), no "etag" when there
// is none, no "sha256" (a file's digest, in hexadecimal) when none is
// recorded for its version. Strings are escaped exactly as encoding/json escapes them, so
// a client decoding the listing sees the same values as before:
// <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029 as escapes,
// control bytes as \n, \t... or \u00XX, and every byte that is not part
// of valid UTF-8 as \ufffd (a name that is not UTF-8 is listed, its odd
// bytes replaced; a client cannot ask for it by that name, as before).

// maxListedDigests is the largest listing whose files carry their
// "sha256": each costs a read of the state area (a few system calls on a
// folder, a GET on a bucket), which would more than double the time of a
// listing of a million files. Larger listings leave the field out, as
// they do for a file without a recorded digest; each download still
// answers Repr-Digest, and FOLDER/SHA256SUMS lists them all.
const maxListedDigests = 10_000

// writeListing writes the JSON listing of the folder at path with the
// entries keep accepts, as they come; digest, when not nil, gives each
// file's SHA-256 in hexadecimal ("" for none), listed as "sha256".
//
// expires, when not nil, gives when each file expires (zero for never),
// listed as "expires" in RFC 3339.
func writeListing(w *bufio.Writer, path string, entries iter.Seq2[largo.Info, error], keep func(largo.Info) bool, digest func(*largo.Info) string, expires func(*largo.Info) time.Time) error {
	b := make([]byte, 0, 512)
	b = append(b, `{"path":`...)
	b = appendJSONString(b, path)
	b = append(b, `,"entries":[`...)
	n := 0
	for in, err := range entries {
		if err != nil {
			return err
		}
		if !keep(in) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, '\n')
		b = appendEntry(b, &in)
		if digest != nil {
			if sum := digest(&in); sum != "" {
				b = append(b[:len(b)-1], `,"sha256":"`...)
				b = append(b, sum...)
				b = append(b, '"', '}')
			}
		}
		if expires != nil {
			if at := expires(&in); !at.IsZero() {
				b = append(b[:len(b)-1], `,"expires":"`...)
				b = at.UTC().AppendFormat(b, time.RFC3339)
				b = append(b, '"', '}')
			}
		}
		if _, err := w.Write(b); err != nil {
			return err // the client is gone: stop merging for nobody
		}
		b = b[:0]
	}
	if n > 0 {
		b = append(b, '\n')
	}
	b = append(b, "]}\n"...)
	_, err := w.Write(b)
	return err
}

// appendEntry appends the JSON object of one entry.
func appendEntry(b []byte, in *largo.Info) []byte {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, in.Name)
	if in.IsDir {
		b = append(b, `,"dir":true,"size":`...)
	} else {
		b = append(b, `,"dir":false,"size":`...)
	}
	b = strconv.AppendInt(b, in.Size, 10)
	if !in.ModTime.IsZero() {
		b = append(b, `,"modified":"`...)
		b = in.ModTime.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if in.ETag != "" {
		b = append(b, `,"etag":`...)
		b = appendJSONString(b, in.ETag)
	}
	return append(b, '}')
}

// hexDigits are the digits of \u escapes, lower case as encoding/json
// writes them.
const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a quoted JSON string, escaped as
// encoding/json escapes it (see above).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is plain, not yet appended
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			default: // other control bytes, and < > &
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainASCII reports whether the ASCII byte c stands for itself in a
// JSON string: not a control byte, a quote or a backslash, nor <, > or
// &, which encoding/json escapes so that JSON is safe inside HTML.
func plainASCII(c byte) bool {
	return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

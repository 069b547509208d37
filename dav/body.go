package dav

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"slices"

	"largo/ingest"
	"largo/wire"
)

// The protocol library decodes a DAV request's XML body whole, and what
// it holds of it grows with the number of properties named far more than
// with the bytes: one PROPPATCH of 20,000 small properties (738 KB) cost
// 128 MB of allocations and 1.4 s. So a body is read first, whole, within
// MaxBody; a PROPFIND's or PROPPATCH's properties are counted with a
// streaming token reader (MaxRequestProps) before the library sees a
// byte; and the library is handed the bytes read.

// MaxBody bounds the XML body of a DAV request (PROPFIND, PROPPATCH,
// LOCK), which is read whole.
const MaxBody = 1 << 20

// MaxRequestProps bounds the properties one PROPFIND or PROPPATCH names.
const MaxRequestProps = 256

// MaxPropSize bounds one dead property's value, in bytes of its XML as
// sent: a PROPPATCH that sets a larger one is refused whole (413).
const MaxPropSize = 64 << 10

var (
	errBodyTooLarge = wire.Refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: at most %d bytes of XML", MaxBody))
	errTooManyNamed = wire.Refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("too many properties: at most %d in one request", MaxRequestProps))
	errPropTooLarge = wire.Refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("a property's value too large: at most %d bytes of XML", MaxPropSize))
)

// readBody reads the XML body of r, a PROPFIND, PROPPATCH or LOCK, whole
// (an error wrapping errBodyTooLarge past MaxBody), and refuses with
// errTooManyNamed a PROPFIND or PROPPATCH that names more than
// MaxRequestProps properties, with errPropTooLarge a PROPPATCH that sets
// one of more than MaxPropSize. An XML body the library will refuse is
// left for it to refuse.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, errBodyTooLarge
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, MaxBody+1)); err != nil {
		return nil, ingest.BodyErr(err)
	}
	if buf.Len() > MaxBody {
		return nil, errBodyTooLarge
	}
	if r.Method == "PROPFIND" || r.Method == "PROPPATCH" {
		n, largest := propStats(buf.Bytes(), MaxRequestProps)
		switch {
		case n > MaxRequestProps:
			return nil, errTooManyNamed
		case r.Method == "PROPPATCH" && largest > MaxPropSize:
			return nil, errPropTooLarge
		}
	}
	return buf.Bytes(), nil
}

// propsNamed counts the properties a PROPFIND or PROPPATCH body names:
// the elements directly inside its DAV:prop (or DAV:include) elements,
// where RFC 4918 puts them (propfind/prop, propfind/include,
// propertyupdate/set/prop, propertyupdate/remove/prop); elements within
// a property's value are not counted. It stops counting past limit, and
// at the first malformed token.
func propsNamed(body []byte, limit int) int {
	n, _ := propStats(body, limit)
	return n
}

// propStats counts the properties a body names, as propsNamed does, and
// returns the bytes of the largest one's XML (its value and end tag).
func propStats(body []byte, limit int) (n int, largest int64) {
	d := xml.NewDecoder(bytes.NewReader(body))
	// holds[i] reports whether the open element at depth i holds
	// properties.
	var holds []bool
	prop, start := -1, int64(0) // the open property's depth, and where its value begins
	for n <= limit {
		tok, err := d.Token()
		if err != nil {
			return n, largest
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(holds) > 0 && holds[len(holds)-1] {
				n++
				prop, start = len(holds), d.InputOffset()
			}
			holds = append(holds, len(holds) <= 2 && t.Name.Space == "DAV:" && (t.Name.Local == "prop" || t.Name.Local == "include"))
		case xml.EndElement:
			holds = holds[:len(holds)-1]
			if len(holds) == prop {
				largest, prop = max(largest, d.InputOffset()-start), -1
			}
		}
	}
	return n, largest
}

// lockOwner returns the owner of a LOCK body (the content of its
// DAV:lockinfo/DAV:owner) as XML that stands on its own: every element
// with its namespace declared on it. The library keeps the owner's bytes
// as sent, whose prefixes may be declared outside it; shown in another
// document (lockdiscovery) they could leave it malformed. ok is false
// when the body has no owner, or is no XML the library would take.
func lockOwner(body []byte) (owner string, ok bool) {
	d := xml.NewDecoder(bytes.NewReader(body))
	var out bytes.Buffer
	e := xml.NewEncoder(&out)
	depth, in := 0, false
	for {
		tok, err := d.Token()
		if err != nil {
			return "", false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 && t.Name.Space == "DAV:" && t.Name.Local == "owner" {
				in = true
				continue
			}
		case xml.EndElement:
			depth--
			if in && depth == 1 {
				if err := e.Flush(); err != nil {
					return "", false
				}
				return out.String(), true
			}
		case xml.Comment, xml.ProcInst, xml.Directive:
			continue
		}
		if in {
			if t, ok := tok.(xml.StartElement); ok {
				// The encoder declares the namespaces itself.
				t.Attr = slices.DeleteFunc(slices.Clone(t.Attr), func(a xml.Attr) bool {
					return a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns"
				})
				tok = t
			}
			if err := e.EncodeToken(xml.CopyToken(tok)); err != nil {
				return "", false
			}
		}
	}
}

package encode

import (
	"strings"
)

// Accept is a parsed Accept-Encoding header: the quality, in thousandths,
// that the client gives each coding. The zero value is the absent header.
type Accept struct {
	present  bool
	q        [len(Codings)]int16 // -1: not listed
	star     int16               // -1: not listed
	identity int16               // -1: not listed
}

// maxAcceptElems bounds the elements read from one header: a real client
// sends a handful, and a hostile one must not make the parse costly.
const maxAcceptElems = 64

// ParseAccept parses the values of the Accept-Encoding header fields of a
// request (r.Header.Values("Accept-Encoding")), following RFC 9110 12.5.3:
// a comma-separated list of codings, each with an optional q-value.
// Coding names are case-insensitive, and x-gzip is gzip. Elements that do
// not parse (a bad q-value, an empty name) are ignored; when a coding is
// listed twice the first listing counts. It never fails: a header that
// says nothing usable yields identity.
func ParseAccept(values []string) Accept {
	a := Accept{present: len(values) > 0, star: -1, identity: -1}
	for i := range a.q {
		a.q[i] = -1
	}
	n := 0
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			if n++; n > maxAcceptElems {
				return a
			}
			name, params, _ := strings.Cut(elem, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			q, ok := qvalue(params)
			if !ok {
				continue
			}
			var slot *int16
			switch name {
			case "*":
				slot = &a.star
			case "identity":
				slot = &a.identity
			case "x-gzip":
				slot = &a.q[Gzip.index()]
			default:
				if i := Coding(name).index(); i >= 0 {
					slot = &a.q[i]
				}
			}
			if slot != nil && *slot < 0 {
				*slot = q
			}
		}
	}
	return a
}

// qvalue parses the parameters of one element and returns its q-value in
// thousandths (1000 when there is none). ok is false when a q parameter
// does not parse.
func qvalue(params string) (q int16, ok bool) {
	q = 1000
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		return parseQ(strings.TrimSpace(v))
	}
	return q, true
}

// parseQ parses a qvalue: "0" or "1", or either with up to three decimals
// ("0.5", "1.000"), as RFC 9110 12.4.2 writes it.
func parseQ(s string) (int16, bool) {
	if s == "" || len(s) > 5 || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	whole := int16(s[0] - '0')
	frac := s[1:]
	if frac == "" {
		return whole * 1000, true
	}
	if frac[0] != '.' {
		return 0, false
	}
	var q int16
	scale := int16(100)
	for _, c := range []byte(frac[1:]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		q += int16(c-'0') * scale
		scale /= 10
	}
	if whole == 1 && q != 0 {
		return 0, false
	}
	return whole*1000 + q, true
}

// Present reports whether the request had an Accept-Encoding header.
func (a Accept) Present() bool { return a.present }

// Quality returns the q-value, in thousandths, that the client gives c: 0
// when it does not accept c. Without a header only identity is accepted:
// RFC 9110 would allow any coding, but clients that send no header are
// often tools that could not decode it.
func (a Accept) Quality(c Coding) int {
	if c == Identity {
		return a.identityQ()
	}
	i := c.index()
	if i < 0 || !a.present {
		return 0
	}
	if a.q[i] >= 0 {
		return int(a.q[i])
	}
	if a.star >= 0 {
		return int(a.star)
	}
	return 0
}

func (a Accept) identityQ() int {
	switch {
	case a.identity >= 0:
		return int(a.identity)
	case a.star == 0:
		return 0
	}
	return 1000
}

// IdentityRefused reports whether the client said it does not accept the
// uncompressed representation ("identity;q=0", or "*;q=0" without an
// identity entry).
func (a Accept) IdentityRefused() bool { return a.identityQ() == 0 }

// Rank returns the codings of Codings the client accepts, most wanted
// first; among equal q-values, in the order of Codings.
func (a Accept) Rank() []Coding {
	out := make([]Coding, 0, len(Codings))
	for _, c := range Codings {
		if a.Quality(c) > 0 {
			out = append(out, c)
		}
	}
	// Insertion sort by q, stable: three elements at most.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && a.Quality(out[j]) > a.Quality(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

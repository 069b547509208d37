package ui

import (
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The keys a folder page sorts by, as ?sort= values.
const (
	SortName     = "name"
	SortSize     = "size"
	SortModified = "modified"
)

// maxFilter bounds the filter text taken from a query.
const maxFilter = 256

// View is the order and filter of a folder page, read from its query:
// ?sort=name|size|modified, ?order=asc|desc, ?q=TEXT. Folders always come
// first. The zero value is by name, ascending, unfiltered.
type View struct {
	Sort   string // one of the Sort keys; "" means SortName
	Desc   bool
	Filter string // case-insensitive substring of the name; "" shows all
}

// ParseView reads a View from a query. Unknown values fall back to the
// defaults; without ?order=, each key takes its natural order: names
// ascending, sizes and times descending (largest and newest first).
func ParseView(q url.Values) View {
	v := View{Sort: q.Get("sort")}
	switch v.Sort {
	case SortName, SortSize, SortModified:
	default:
		v.Sort = SortName
	}
	switch q.Get("order") {
	case "asc":
	case "desc":
		v.Desc = true
	default:
		v.Desc = defaultDesc(v.Sort)
	}
	f := q.Get("q")
	if len(f) > maxFilter {
		f = strings.ToValidUTF8(f[:maxFilter], "")
	}
	v.Filter = strings.TrimSpace(f)
	return v
}

// defaultDesc reports whether a key sorts descending when first chosen.
func defaultDesc(key string) bool { return key == SortSize || key == SortModified }

// Query returns the query string, with its "?", that asks for v.
func (v View) Query() string {
	q := url.Values{}
	key := v.Sort
	if key == "" {
		key = SortName
	}
	q.Set("sort", key)
	if v.Desc {
		q.Set("order", "desc")
	} else {
		q.Set("order", "asc")
	}
	if v.Filter != "" {
		q.Set("q", v.Filter)
	}
	return "?" + q.Encode()
}

// Apply returns the entries v shows, in its order. entries is not
// modified.
func (v View) Apply(entries []Entry) []Entry {
	out := make([]Entry, 0, len(entries))
	m := v.Matcher()
	for _, e := range entries {
		if m(e.Name) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, v.Compare)
	return out
}

// Matcher returns the test of v's filter: whether a name is shown.
func (v View) Matcher() func(name string) bool {
	f := strings.ToLower(v.Filter)
	if f == "" {
		return func(string) bool { return true }
	}
	return func(name string) bool { return strings.Contains(strings.ToLower(name), f) }
}

// Compare orders two entries as v shows them: folders first, then by the
// view's key in its direction, ties by name ascending whatever the
// direction. It is the order of Apply, for callers that sort entries
// themselves (a listing too large to hold).
func (v View) Compare(a, b Entry) int {
	if a.Dir != b.Dir {
		if a.Dir {
			return -1
		}
		return 1
	}
	c := 0
	switch v.Sort {
	case SortSize:
		c = cmpInt(a.Size, b.Size)
	case SortModified:
		// Milliseconds, the precision of the page's script.
		c = cmpInt(a.Modified.UnixMilli(), b.Modified.UnixMilli())
	default:
		c = CompareNames(a.Name, b.Name)
	}
	if v.Desc {
		c = -c
	}
	if c == 0 {
		// Ties read by name, whatever the direction.
		c = CompareNames(a.Name, b.Name)
	}
	return c
}

// CompareNames orders names as people expect: letters without regard to
// case, and runs of digits by their value, so "file2" comes before
// "file10". Names equal by that rule are ordered by their code points. The
// page's script (format.js) implements the same order, so a page sorted in
// the browser matches one sorted here.
func CompareNames(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := digitsEnd(a, i), digitsEnd(b, j)
			na, nb := strings.TrimLeft(a[i:ei], "0"), strings.TrimLeft(b[j:ej], "0")
			if len(na) != len(nb) {
				return cmpInt(int64(len(na)), int64(len(nb)))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		ra, sa := utf8.DecodeRuneInString(a[i:])
		rb, sb := utf8.DecodeRuneInString(b[j:])
		if la, lb := unicode.ToLower(ra), unicode.ToLower(rb); la != lb {
			return cmpInt(int64(la), int64(lb))
		}
		i, j = i+sa, j+sb
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

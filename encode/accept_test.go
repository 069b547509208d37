package encode

import (
	"slices"
	"strings"
	"testing"
)

func TestParseAccept(t *testing.T) {
	tests := []struct {
		header  []string // nil: no header
		zstd    int
		br      int
		gzip    int
		refused bool // identity refused
		rank    []Coding
	}{
		{nil, 0, 0, 0, false, nil},
		{[]string{""}, 0, 0, 0, false, nil},
		{[]string{"gzip"}, 0, 0, 1000, false, []Coding{Gzip}},
		{[]string{"GZIP"}, 0, 0, 1000, false, []Coding{Gzip}},
		{[]string{"x-gzip"}, 0, 0, 1000, false, []Coding{Gzip}},
		{[]string{"gzip, deflate, br, zstd"}, 1000, 1000, 1000, false, []Coding{Zstd, Brotli, Gzip}},
		{[]string{"gzip", "br"}, 0, 1000, 1000, false, []Coding{Brotli, Gzip}},
		{[]string{"br;q=0.5, gzip;q=0.8"}, 0, 500, 800, false, []Coding{Gzip, Brotli}},
		{[]string{"br;q=1.0, zstd;q=0.999"}, 999, 1000, 0, false, []Coding{Brotli, Zstd}},
		{[]string{"gzip;q=0"}, 0, 0, 0, false, nil},
		{[]string{"gzip;q=0.000"}, 0, 0, 0, false, nil},
		{[]string{"identity;q=0"}, 0, 0, 0, true, nil},
		{[]string{"gzip, identity;q=0"}, 0, 0, 1000, true, []Coding{Gzip}},
		{[]string{"*"}, 1000, 1000, 1000, false, []Coding{Zstd, Brotli, Gzip}},
		{[]string{"*;q=0"}, 0, 0, 0, true, nil},
		{[]string{"*;q=0, identity"}, 0, 0, 0, false, nil},
		{[]string{"*;q=0.2, br"}, 200, 1000, 200, false, []Coding{Brotli, Zstd, Gzip}},
		{[]string{"gzip;q=0, *"}, 1000, 1000, 0, false, []Coding{Zstd, Brotli}},
		{[]string{"gzip ; Q=0.5"}, 0, 0, 500, false, []Coding{Gzip}},
		{[]string{"gzip;level=9;q=0.3"}, 0, 0, 300, false, []Coding{Gzip}},
		{[]string{"gzip;q=2"}, 0, 0, 0, false, nil},
		{[]string{"gzip;q=1.5"}, 0, 0, 0, false, nil},
		{[]string{"gzip;q=0.1234"}, 0, 0, 0, false, nil},
		{[]string{"gzip;q=abc, br"}, 0, 1000, 0, false, []Coding{Brotli}},
		{[]string{"gzip;q=, br"}, 0, 1000, 0, false, []Coding{Brotli}},
		{[]string{"gzip;q=0.5, gzip"}, 0, 0, 500, false, []Coding{Gzip}},
		{[]string{",,, ;q=1, zstd"}, 1000, 0, 0, false, []Coding{Zstd}},
		{[]string{"compress, deflate"}, 0, 0, 0, false, nil},
		{[]string{"identity"}, 0, 0, 0, false, nil},
	}
	for _, tt := range tests {
		a := ParseAccept(tt.header)
		got := []int{a.Quality(Zstd), a.Quality(Brotli), a.Quality(Gzip)}
		want := []int{tt.zstd, tt.br, tt.gzip}
		if !slices.Equal(got, want) || a.IdentityRefused() != tt.refused || !slices.Equal(a.Rank(), tt.rank) {
			t.Errorf("%q: q %v refused %v rank %v; want %v %v %v", tt.header, got, a.IdentityRefused(), a.Rank(), want, tt.refused, tt.rank)
		}
	}
}

func TestParseAcceptBounded(t *testing.T) {
	h := strings.Repeat("foo, ", 1000) + "gzip"
	if q := ParseAccept([]string{h}).Quality(Gzip); q != 0 {
		t.Errorf("gzip after 1000 elements accepted (q %d): the parse is not bounded", q)
	}
}

// FuzzParseAccept checks the invariants of any header: q-values within
// 0..1000, Rank holding exactly the accepted codings in non-increasing
// order, and the same answer whether the header comes as one field or
// split in two at a comma.
func FuzzParseAccept(f *testing.F) {
	for _, s := range []string{"gzip", "br;q=0.5, gzip;q=0.8", "*;q=0, identity", "identity;q=0", "x-gzip;q=1.000", ";;;,,q=", "zstd;q=0.001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		a := ParseAccept([]string{h})
		rank := a.Rank()
		for _, c := range Codings {
			q := a.Quality(c)
			if q < 0 || q > 1000 {
				t.Fatalf("%q: quality of %s is %d", h, c, q)
			}
			if (q > 0) != slices.Contains(rank, c) {
				t.Fatalf("%q: %s has q %d but rank %v", h, c, q, rank)
			}
		}
		for i := 1; i < len(rank); i++ {
			if a.Quality(rank[i]) > a.Quality(rank[i-1]) {
				t.Fatalf("%q: rank %v out of order", h, rank)
			}
		}
		if q := a.Quality(Identity); q < 0 || q > 1000 {
			t.Fatalf("%q: identity quality %d", h, q)
		}
		if i := strings.IndexByte(h, ','); i >= 0 && strings.Count(h, ",") < maxAcceptElems {
			b := ParseAccept([]string{h[:i], h[i+1:]})
			if b != a {
				t.Fatalf("%q: split at the comma parses differently", h)
			}
		}
	})
}

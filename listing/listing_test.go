package listing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"largo"
	"largo/limit"
)

// entries makes n entries with random names of about nameLen bytes,
// folders, links, times (some zero) and ETags among them.
func entries(n, nameLen int, seed uint64) []largo.Info {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]largo.Info, n)
	for i := range out {
		b := make([]byte, nameLen/2+r.IntN(nameLen))
		for j := range b {
			b[j] = "abcXYZ0123._-é"[r.IntN(14)]
		}
		in := largo.Info{Name: fmt.Sprintf("%s-%d", b, i), Size: r.Int64N(1 << 40)}
		switch r.IntN(4) {
		case 0:
			in.IsDir, in.Size = true, 0
		case 1:
			in.Link = true
		}
		if r.IntN(5) > 0 {
			in.ModTime = time.Unix(r.Int64N(2e9), r.Int64N(1e9)).UTC()
		}
		if !in.IsDir {
			in.ETag = fmt.Sprintf(`"%x"`, r.Uint64())
			if r.IntN(3) == 0 {
				in.ContentType = "text/plain"
			}
		}
		out[i] = in
	}
	return out
}

// infoCompare is an order over whole entries, for checking.
func infoCompare(o Order) func(a, b largo.Info) int {
	return func(a, b largo.Info) int {
		x := Item{Name: a.Name, Dir: a.IsDir, Link: a.Link, Size: a.Size, ModTime: a.ModTime}
		y := Item{Name: b.Name, Dir: b.IsDir, Link: b.Link, Size: b.Size, ModTime: b.ModTime}
		return o.Compare(&x, &y)
	}
}

func collect(t *testing.T, seq iter.Seq2[largo.Info, error]) []largo.Info {
	t.Helper()
	var out []largo.Info
	for in, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

func sameEntries(t *testing.T, got, want []largo.Info) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries; want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// bySize is an order with keys besides the name, as a page sorts.
var bySize = Compare(func(a, b *Item) int {
	if c := cmp.Compare(b.Size, a.Size); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
})

// TestSort sorts folders that fit in memory and folders many times the
// memory allowed, which spill runs and merge them in several passes, and
// checks every entry comes back whole and in order, within the budget.
func TestSort(t *testing.T) {
	for _, tt := range []struct {
		name      string
		n, length int
		max       int64
		order     Order
		passes    bool // more runs than one merge takes
	}{
		{"empty", 0, 10, 0, DirsFirst, false},
		{"in memory", 1000, 12, 0, DirsFirst, false},
		{"spilled", 30_000, 20, step, ByName, false},
		{"spilled, several passes", 50_000, 60, step, bySize, true},
		{"spilled, several passes, by name", 50_000, 60, step, DirsFirst, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			budget := limit.NewBudget(64<<20, 0)
			c := Config{Budget: budget, Max: tt.max, Dir: dir}
			s, err := c.NewSorter(tt.order)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			in := entries(tt.n, tt.length, 1)
			most := int64(0)
			for _, e := range in {
				if err := s.Add(e); err != nil {
					t.Fatal(err)
				}
				most = max(most, budget.InUse())
			}
			if tt.max > 0 && most > tt.max {
				t.Errorf("held %d bytes; the most allowed is %d", most, tt.max)
			}
			if tt.passes != (len(s.runs) > s.fanIn()) {
				t.Errorf("%d runs, %d merged at once: several passes %v; want %v", len(s.runs), s.fanIn(), !tt.passes, tt.passes)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("%d files left in the spill folder", len(ents))
			}
			want := slices.Clone(in)
			slices.SortFunc(want, infoCompare(tt.order))
			sameEntries(t, collect(t, s.All()), want)
			if tt.max > 0 && len(s.runs) > s.fanIn() {
				t.Errorf("%d runs left to merge", len(s.runs))
			}
			s.Close()
			if budget.InUse() != 0 {
				t.Errorf("%d bytes still held after Close", budget.InUse())
			}
		})
	}
}

// TestBudget checks that listings share the budget: one that cannot get
// its first step fails with ErrBusy; one that cannot get more spills and
// still lists everything.
func TestBudget(t *testing.T) {
	budget := limit.NewBudget(2*step, 0)
	c := Config{Budget: budget, Dir: t.TempDir()}
	a, err := c.NewSorter(ByName)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := c.NewSorter(ByName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewSorter(ByName); !errors.Is(err, ErrBusy) {
		t.Fatalf("third listing: %v; want ErrBusy", err)
	}
	in := entries(20_000, 30, 2)
	for _, e := range in {
		if err := a.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.runs) == 0 {
		t.Fatal("a listing over its share did not spill")
	}
	want := slices.Clone(in)
	slices.SortFunc(want, infoCompare(ByName))
	sameEntries(t, collect(t, a.All()), want)
	b.Close()
	a.Close()
	if budget.InUse() != 0 {
		t.Fatalf("%d bytes held after both closed", budget.InUse())
	}
}

// TestResort filters a listing in one order and sorts what is kept in
// another, in memory and spilled; keep sees the first order.
func TestResort(t *testing.T) {
	for _, max := range []int64{0, step} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			budget := limit.NewBudget(64<<20, 0)
			c := Config{Budget: budget, Max: max, Dir: t.TempDir()}
			in := entries(20_000, 20, 3)
			if max == 0 {
				in = in[:2000]
			}
			s, err := c.NewSorter(DirsFirst)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range in {
				s.Add(e)
			}
			var seen []largo.Info
			keep := func(e largo.Info) bool {
				seen = append(seen, e)
				return strings.Contains(e.Name, "a")
			}
			r, err := s.Resort(bySize, keep)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			first := slices.Clone(in)
			slices.SortFunc(first, infoCompare(DirsFirst))
			sameEntries(t, seen, first)
			var want []largo.Info
			for _, e := range first {
				if strings.Contains(e.Name, "a") {
					want = append(want, e)
				}
			}
			slices.SortFunc(want, infoCompare(bySize))
			sameEntries(t, collect(t, r.All()), want)
			r.Close()
			s.Close()
			if budget.InUse() != 0 {
				t.Fatalf("%d bytes held after Close", budget.InUse())
			}
		})
	}
}

// fakeStore lists a fixed folder.
type fakeStore struct {
	largo.Store
	ents []largo.Info
}

func (f fakeStore) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		for _, e := range f.ents {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func TestList(t *testing.T) {
	in := entries(5000, 10, 4)
	c := Config{Max: step, Dir: t.TempDir()}
	s, err := c.List(context.Background(), fakeStore{ents: in}, "", DirsFirst, func(e largo.Info) bool { return !e.IsDir })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []largo.Info
	for _, e := range in {
		if !e.IsDir {
			want = append(want, e)
		}
	}
	slices.SortFunc(want, infoCompare(DirsFirst))
	if s.Len() != len(want) {
		t.Errorf("Len %d; want %d", s.Len(), len(want))
	}
	sameEntries(t, collect(t, s.All()), want)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.List(ctx, fakeStore{ents: in}, "", DirsFirst, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled listing: %v", err)
	}
}

// TestSmallListingGivesBack checks that a listing that fits in memory,
// once sorted, holds only what its arena uses, so that the listings an
// archive keeps open on its way down cost little.
func TestSmallListingGivesBack(t *testing.T) {
	budget := limit.NewBudget(64<<20, 0)
	s, err := Config{Budget: budget}.NewSorter(ByName)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, e := range entries(100, 10, 5) {
		s.Add(e)
	}
	for range s.All() {
		break
	}
	if used := budget.InUse(); used > chunkSize+int64(firstOffs*entSize) {
		t.Fatalf("a sorted listing of 100 entries holds %d bytes", used)
	}
}

// prefixNames makes n entries whose names share long prefixes, are
// prefixes of each other, are shorter and longer than a key, and hold
// bytes that are not UTF-8 and NULs (a bucket's keys may): the names a
// NameOrder must compare whole.
func prefixNames(n int, seed uint64) []largo.Info {
	r := rand.New(rand.NewPCG(seed, 9))
	stems := []string{"", "a", "ab", "ab\x00", "abcdefg", "abcdefgh", "abcdefghi", "IMG_2024", "IMG_20240101_", "\xff\xfe", "é"}
	out := make([]largo.Info, n)
	for i := range out {
		name := stems[r.IntN(len(stems))]
		for range r.IntN(3) {
			name += stems[r.IntN(len(stems))]
		}
		name += fmt.Sprint(r.IntN(n))
		out[i] = largo.Info{Name: name, IsDir: r.IntN(3) == 0, Size: int64(i)}
	}
	return out
}

// TestNameOrder sorts names a key cannot tell apart, in memory and
// spilled: a NameOrder gives the order its Compare gives through the
// general path, the one that decodes every entry.
func TestNameOrder(t *testing.T) {
	for _, order := range []NameOrder{ByName, DirsFirst} {
		for _, max := range []int64{0, step} {
			t.Run(fmt.Sprint(order, max), func(t *testing.T) {
				in := prefixNames(20_000, uint64(order)+1)
				c := Config{Max: max, Dir: t.TempDir()}
				sorted := func(o Order) []largo.Info {
					s, err := c.NewSorter(o)
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					for _, e := range in {
						if err := s.Add(e); err != nil {
							t.Fatal(err)
						}
					}
					if spilled := len(s.runs) > 0; spilled != (max > 0) {
						t.Fatalf("spilled %v", spilled)
					}
					return collect(t, s.All())
				}
				got := sorted(order)
				want := slices.Clone(in)
				slices.SortStableFunc(want, infoCompare(order))
				// Equal names (a folder and a file, by name) may come in
				// either order: compare what the order tells apart.
				differ := func(a, b largo.Info) bool {
					return a.Name != b.Name || order == DirsFirst && a.IsDir != b.IsDir
				}
				for i := range want {
					if differ(got[i], want[i]) {
						t.Fatalf("entry %d: got %q, want %q", i, got[i].Name, want[i].Name)
					}
				}
				general := sorted(Compare(order.Compare))
				for i := range want {
					if differ(general[i], got[i]) {
						t.Fatalf("entry %d: %q by key, %q by the general path", i, got[i].Name, general[i].Name)
					}
				}
			})
		}
	}
}

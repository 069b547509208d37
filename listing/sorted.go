package listing

import (
	"context"
	"iter"

	"largo"
)

// Filter makes the test of the entries of the folder dir: given each
// entry in a listing's order, it says whether the entry is kept. A new
// test is made for every folder, so it may keep state across one
// folder's entries (in ByName's order, a sidecar's original comes before
// it).
type Filter func(dir string) func(largo.Info) bool

// Sorted returns st as a walk in a deterministic order wants it
// (largo.WalkDir): each folder listed in order, within the memory c
// allows, and, when keep is not nil, filtered by the test keep makes for
// it. A walk keeps a folder's listing open while its entries are walked,
// so it holds a Sorter (in memory if the folder was small, else runs on
// disk and a few kilobytes of buffers) for each level it is in. Stat and
// Open are st's own.
func (c Config) Sorted(st largo.Store, order Order, keep Filter) largo.Store {
	return &sorted{Store: st, c: c, order: order, keep: keep}
}

// sorted is a store whose listings are sorted.
type sorted struct {
	largo.Store
	c     Config
	order Order
	keep  Filter
}

// List implements largo.Store: the folder's entries in order, kept by
// the folder's test; a listing that could not be made (ErrBusy, or the
// store's failure) yields its error alone.
func (s *sorted) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		l, err := s.c.List(ctx, s.Store, name, s.order, nil)
		if err != nil {
			yield(largo.Info{}, err)
			return
		}
		defer l.Close()
		var kept func(largo.Info) bool
		if s.keep != nil {
			kept = s.keep(name)
		}
		for in, err := range l.All() {
			if err == nil && kept != nil && !kept(in) {
				continue
			}
			if !yield(in, err) || err != nil {
				return
			}
		}
	}
}

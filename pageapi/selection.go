package pageapi

import (
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"

	"largo"
	"largo/archive"
	"largo/wire"
)

// SelectionPath answers some entries of one folder as one archive, as
// ?archive= answers the whole folder: GET, or POST with a form for
// selections too long for a URL, with the fields dir (the folder's URL
// path), format (zip, tar or tar.zst) and name (an entry of the folder,
// repeated; at most maxSelection). The archive holds a folder named as
// dir ("files" for the root) with the entries chosen in it, folders with
// all they hold, in name order; every entry is read through the gated
// store, and an entry the requester may not see is a 404 before the
// first byte. Reading needs no same-origin check: a read changes nothing.
const SelectionPath = prefix + "archive"

// Bounds of a selection: its entries, and the form that names them.
const (
	maxSelection     = 10000
	maxSelectionForm = 4 << 20
)

// selection answers SelectionPath.
func (a *API) selection(w http.ResponseWriter, r *http.Request) error {
	if err := readForm(w, r, maxSelectionForm); err != nil {
		return err
	}
	dir, err := pathName(r.Form.Get("dir"), "dir")
	if err != nil {
		return err
	}
	f, err := archive.ParseFormat(r.Form.Get("format"))
	if err != nil {
		return wire.Refuse(http.StatusBadRequest, err.Error())
	}
	names := slices.Clone(r.Form["name"])
	switch {
	case len(names) == 0:
		return wire.Refuse(http.StatusBadRequest, "name: choose at least one entry")
	case len(names) > maxSelection:
		return wire.Refuse(http.StatusRequestEntityTooLarge, "name: at most 10000 entries at once")
	}
	for _, n := range names {
		if elem, err := largo.ParseName("/" + n); err != nil || elem != n || strings.Contains(n, "/") {
			return wire.Refuse(http.StatusBadRequest, "name: an entry of the folder, without a slash")
		}
	}
	slices.Sort(names) // the order of a folder's archive: by name, byte by byte
	names = slices.Compact(names)
	top := archive.Top(dir)
	return a.cfg.Archives.Serve(w, r, a.cfg.Store, f, top, a.selected(r, dir, top, names))
}

// selected yields the entries of the archive of names, entries of the
// folder dir, under a folder named top.
func (a *API) selected(r *http.Request, dir, top string, names []string) iter.Seq2[archive.Entry, error] {
	ctx := r.Context()
	store := a.cfg.Store
	keep := func(d string) func(largo.Info) bool { return a.cfg.Sidecars.Shows(ctx, d, a.log) }
	lc := a.listingFor(r)
	return func(yield func(archive.Entry, error) bool) {
		in, err := store.Stat(ctx, dir)
		if err == nil && !in.IsDir {
			err = fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
		}
		if err != nil {
			yield(archive.Entry{}, err)
			return
		}
		if !yield(archive.Entry{Path: top + "/", Name: dir, Info: in}, nil) {
			return
		}
		for _, n := range names {
			name := largo.Join(dir, n)
			if largo.Reserved(name) {
				yield(archive.Entry{}, largo.ErrNotFound)
				return
			}
			in, err := store.Stat(ctx, name)
			if err != nil {
				yield(archive.Entry{}, err)
				return
			}
			if !in.IsDir {
				if !yield(archive.Entry{Path: top + "/" + n, Name: name, Info: in}, nil) {
					return
				}
				continue
			}
			for e, err := range archive.Walk(ctx, store, name, top+"/"+n, lc, keep) {
				if !yield(e, err) || err != nil {
					return
				}
			}
		}
	}
}

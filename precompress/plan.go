package precompress

import (
	"context"
	"io"
	"iter"
	"net/http"
	"slices"

	"largo"
	"largo/encode"
	"largo/sidecar"
)

// Plan is the work a run will do, known before it starts, for a progress
// bar.
type Plan struct {
	// Files are the files to compress, by their names in the store.
	Files []string
	// Bytes is the total of their sizes times the codings, the units of
	// progress: each task advances it by the original's size.
	Bytes int64
	// Fresh are the files skipped as up to date.
	Fresh []string
	sizes map[string]int64
}

// Prepare walks the store of cfg.Writes and returns the plan of a run. A
// folder that cannot be listed fails the walk; links are passed over
// (what a link leads to is compressed where it is).
func Prepare(ctx context.Context, cfg Config) (*Plan, error) {
	cfg = defaults(cfg)
	store := &folders{Store: cfg.Writes.Store()}
	records := recordsOf(cfg)
	p := &Plan{sizes: map[string]int64{}}
	err := largo.WalkDir(ctx, store, "", func(name string, in largo.Info, err error) error {
		if err != nil || in.IsDir || in.Link || in.Size < encode.MinSize {
			return err
		}
		dir, entries := store.current()
		if base, _, ok := encode.SidecarBase(in.Name); ok {
			if b, ok := entries[base]; ok && !b.IsDir {
				return nil // a sidecar, not a file to compress
			}
		}
		switch {
		case !compressible(ctx, store, name, in, cfg.MediaType):
		case upToDate(ctx, cfg, records, entries, dir, in):
			p.Fresh = append(p.Fresh, name)
		default:
			p.Files = append(p.Files, name)
			p.sizes[name] = in.Size
			p.Bytes += in.Size * int64(len(cfg.Codings))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(p.Files)
	slices.Sort(p.Fresh)
	return p, nil
}

// folders is a store as Prepare walks it: each folder's entries read
// whole and kept by their names while they are walked, for a file's
// sidecars are known by the entries beside it.
type folders struct {
	largo.Store
	open []folder // the folders being walked, the innermost last
}

// folder is a folder's name and its entries by their names.
type folder struct {
	name    string
	entries map[string]largo.Info
}

// List implements largo.Store: the folder's entries, kept while they are
// walked.
func (f *folders) List(ctx context.Context, dir string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		entries := map[string]largo.Info{}
		for in, err := range f.Store.List(ctx, dir) {
			if err != nil {
				yield(largo.Info{}, err)
				return
			}
			entries[in.Name] = in
		}
		f.open = append(f.open, folder{dir, entries})
		defer func() { f.open = f.open[:len(f.open)-1] }()
		for _, in := range entries {
			if !yield(in, nil) {
				return
			}
		}
	}
}

// current returns the folder whose entries are being walked.
func (f *folders) current() (string, map[string]largo.Info) {
	if len(f.open) == 0 {
		return "", nil
	}
	c := f.open[len(f.open)-1]
	return c.name, c.entries
}

// compressible applies the policy to a file's media type, decided as the
// server decides it: the type the store keeps, unless it is the generic
// one stores give when none was said; else the name's; else, for no type
// at all, the first bytes.
func compressible(ctx context.Context, store largo.Store, name string, in largo.Info, mediaType func(string) string) bool {
	generic := in.ContentType == "application/octet-stream" || in.ContentType == "binary/octet-stream"
	switch {
	case in.ContentType != "" && !generic:
		return encode.Compressible(in.ContentType)
	case mediaType(name) != "":
		return encode.Compressible(mediaType(name))
	case generic:
		return false
	}
	f, err := store.Open(ctx, name)
	if err != nil {
		return false
	}
	defer f.Close()
	var buf [512]byte
	n, _ := io.ReadFull(f, buf[:])
	return encode.Compressible(http.DetectContentType(buf[:n]))
}

// upToDate reports whether the file in, of the folder dir, has at least
// one sidecar among the entries of its folder, and all of them are fresh:
// recorded as made from in, or with cfg.AnySidecars not older than in. A
// file of its own under a sidecar's name (not recorded) is no sidecar.
func upToDate(ctx context.Context, cfg Config, records *sidecar.Checker, entries map[string]largo.Info, dir string, in largo.Info) bool {
	found := false
	for _, c := range cfg.Codings {
		si, ok := entries[encode.Sidecar(in.Name, c)]
		if !ok || si.IsDir {
			continue
		}
		if cfg.AnySidecars {
			if si.ModTime.Before(in.ModTime) {
				return false
			}
			found = true
			continue
		}
		if ok, _ := records.Recorded(ctx, largo.Join(dir, si.Name), si, in.ETag); ok {
			found = true
		}
	}
	return found
}

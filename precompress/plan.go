package precompress

import (
	"context"
	"io"
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
// folder that cannot be listed fails the walk.
func Prepare(ctx context.Context, cfg Config) (*Plan, error) {
	cfg = defaults(cfg)
	store := cfg.Writes.Store()
	records := recordsOf(cfg)
	p := &Plan{sizes: map[string]int64{}}
	for dirs := []string{""}; len(dirs) > 0; {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		entries, err := list(ctx, store, dir)
		if err != nil {
			return nil, err
		}
		for _, in := range entries {
			name := largo.Join(dir, in.Name)
			switch {
			case in.Link || largo.Reserved(name):
				continue
			case in.IsDir:
				dirs = append(dirs, name)
				continue
			case in.Size < encode.MinSize:
				continue
			}
			if base, _, ok := encode.SidecarBase(in.Name); ok {
				if b, ok := entries[base]; ok && !b.IsDir {
					continue // a sidecar, not a file to compress
				}
			}
			if !compressible(ctx, store, name, in, cfg.MediaType) {
				continue
			}
			if upToDate(ctx, cfg, records, entries, dir, in) {
				p.Fresh = append(p.Fresh, name)
				continue
			}
			p.Files = append(p.Files, name)
			p.sizes[name] = in.Size
			p.Bytes += in.Size * int64(len(cfg.Codings))
		}
	}
	slices.Sort(p.Files)
	slices.Sort(p.Fresh)
	return p, nil
}

// list returns the entries of the folder dir by their names.
func list(ctx context.Context, store largo.Store, dir string) (map[string]largo.Info, error) {
	entries := map[string]largo.Info{}
	for in, err := range store.List(ctx, dir) {
		if err != nil {
			return nil, err
		}
		entries[in.Name] = in
	}
	return entries, ctx.Err()
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

// Package precompress writes precompressed sidecars for the compressible
// files of a folder: NAME.zst, NAME.br and NAME.gz beside NAME, at the
// codings' best levels (encode.Max) unless told otherwise, for the server to send with sendfile
// instead of compressing on every request.
//
// Run walks the folder (leaving out dot-files and dot-folders, which are
// never served, and existing sidecars), and compresses each file that the
// compression policy would compress, one coding per task, on as many
// workers as there are cores. A sidecar is kept only when it saves at
// least MinSaving of the original; a file whose sidecars are all fresh
// (none older than the file) is skipped. Sidecars are written atomically:
// into a hidden temporary file in the same folder, synced, then renamed
// over the target, so the server sees the old sidecar or the whole new
// one, never a part; a file that changes while it is compressed gets no
// sidecar. Stale sidecars that are not replaced are removed.
package precompress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"largo/encode"
)

// MinSaving is the least fraction of a file's size a sidecar must save to
// be kept: below it the server might as well send the file itself.
const MinSaving = 0.10

// Config configures Run. Dir is required.
type Config struct {
	// Dir is the folder to walk.
	Dir string
	// MediaType returns the media type of a file from its name, or "" when
	// the name does not tell; the file's first bytes decide then. Nil
	// means mime.TypeByExtension.
	MediaType func(name string) string
	// Jobs is the number of files compressed at once; zero means one per
	// core.
	Jobs int
	// Level is the compression level. The zero value is encode.Fast;
	// sidecars are meant for encode.Max, what largo precompress uses.
	Level encode.Level
	// Codings are the codings to write; nil means all of encode.Codings.
	Codings []encode.Coding
	// Progress, if set, is called from the workers (one call at a time)
	// after each task, and once per skipped file.
	Progress func(Event)
	// Read, if set, is called as the workers read the files being
	// compressed, with the bytes read, from several goroutines at once:
	// the fine-grained progress of Plan.Bytes.
	Read func(n int64)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Event reports one task: a sidecar written, not worth keeping, skipped
// as fresh, or failed.
type Event struct {
	// Name is the original file's path, relative to Dir, slash-separated.
	Name string
	// Coding is the sidecar's coding; "" for a skipped file.
	Coding encode.Coding
	// Size is the original's size, and Encoded the sidecar's (0 when
	// skipped or failed).
	Size, Encoded int64
	// Kept reports a sidecar written; Fresh a file skipped because its
	// sidecars are up to date.
	Kept, Fresh bool
	// Err is the failure of the task, if any.
	Err error
}

// Summary totals a run.
type Summary struct {
	// Files is the number of compressible files found; Fresh of those
	// skipped as up to date; Compressed of those compressed now.
	Files, Fresh, Compressed int
	// Sidecars is the number of sidecars written; Dropped the number not
	// kept for saving too little; Failed the number of failed tasks.
	Sidecars, Dropped, Failed int
	// Before is the total size of the files compressed now; After the
	// total of the smallest sidecar of each (the original's size when no
	// sidecar was kept): what the best-compressing client receives.
	Before, After int64
	// Bytes holds the total size of the written sidecars per coding.
	Bytes map[encode.Coding]int64
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// Plan is the work a run will do, known before it starts, for a progress
// bar.
type Plan struct {
	// Files are the files to compress, relative to Dir.
	Files []string
	// Bytes is the total of their sizes times the codings, the units of
	// progress: each task advances it by the original's size.
	Bytes int64
	// Fresh are the files skipped as up to date.
	Fresh []string
	sizes map[string]int64
}

// Prepare walks cfg.Dir and returns the plan of a run.
func Prepare(ctx context.Context, cfg Config) (*Plan, error) {
	cfg = defaults(cfg)
	p := &Plan{sizes: map[string]int64{}}
	root, err := os.OpenRoot(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if name != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if base, _, ok := encode.SidecarBase(name); ok {
			if fi, err := root.Stat(base); err == nil && fi.Mode().IsRegular() {
				return nil // a sidecar, not a file to compress
			}
		}
		fi, err := d.Info()
		if err != nil {
			return nil // vanished
		}
		if fi.Size() < encode.MinSize || !compressible(root, name, cfg.MediaType) {
			return nil
		}
		if upToDate(root, name, fi, cfg.Codings) {
			p.Fresh = append(p.Fresh, name)
			return nil
		}
		p.Files = append(p.Files, name)
		p.sizes[name] = fi.Size()
		p.Bytes += fi.Size() * int64(len(cfg.Codings))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(p.Files)
	return p, nil
}

// compressible applies the policy to a file's type, from its name or else
// its first bytes.
func compressible(root *os.Root, name string, mediaType func(string) string) bool {
	if mt := mediaType(name); mt != "" {
		return encode.Compressible(mt)
	}
	f, err := root.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var buf [512]byte
	n, _ := io.ReadFull(f, buf[:])
	return encode.Compressible(http.DetectContentType(buf[:n]))
}

// upToDate reports whether name has at least one sidecar and all of them
// are fresh.
func upToDate(root *os.Root, name string, fi fs.FileInfo, codings []encode.Coding) bool {
	found := false
	for _, c := range codings {
		si, err := root.Stat(encode.Sidecar(name, c))
		if err != nil {
			continue
		}
		if si.ModTime().Before(fi.ModTime()) {
			return false
		}
		found = true
	}
	return found
}

func defaults(cfg Config) Config {
	if cfg.MediaType == nil {
		cfg.MediaType = extType
	}
	if cfg.Jobs <= 0 {
		cfg.Jobs = runtime.GOMAXPROCS(0)
	}
	if cfg.Codings == nil {
		cfg.Codings = encode.Codings[:]
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// Run writes the sidecars of plan, which Prepare made from the same cfg,
// and returns the totals. It returns an error only when the run could not
// be done at all or ctx was cancelled; failures of single files are in the
// Summary and the Events.
func Run(ctx context.Context, cfg Config, plan *Plan) (Summary, error) {
	cfg = defaults(cfg)
	start := cfg.Now()
	sum := Summary{Files: len(plan.Files) + len(plan.Fresh), Fresh: len(plan.Fresh), Bytes: map[encode.Coding]int64{}}
	root, err := os.OpenRoot(cfg.Dir)
	if err != nil {
		return sum, err
	}
	defer root.Close()

	var mu sync.Mutex // guards sum, smallest and Progress calls
	report := func(ev Event) {
		if cfg.Progress != nil {
			cfg.Progress(ev)
		}
	}
	for _, name := range plan.Fresh {
		report(Event{Name: name, Fresh: true})
	}
	smallest := map[string]int64{}
	type task struct {
		name string
		c    encode.Coding
	}
	tasks := make(chan task)
	var wg sync.WaitGroup
	for range cfg.Jobs {
		wg.Go(func() {
			for t := range tasks {
				ev := Event{Name: t.name, Coding: t.c, Size: plan.sizes[t.name]}
				if ctx.Err() == nil {
					ev.Encoded, ev.Kept, ev.Err = compress(ctx, root, t.name, t.c, cfg.Level, cfg.Read)
				} else {
					ev.Err = ctx.Err()
				}
				mu.Lock()
				switch {
				case ev.Err != nil:
					sum.Failed++
				case ev.Kept:
					sum.Sidecars++
					sum.Bytes[t.c] += ev.Encoded
					if s, ok := smallest[t.name]; !ok || ev.Encoded < s {
						smallest[t.name] = ev.Encoded
					}
				default:
					sum.Dropped++
				}
				report(ev)
				mu.Unlock()
			}
		})
	}
	for _, name := range plan.Files {
		for _, c := range cfg.Codings {
			select {
			case tasks <- task{name, c}:
			case <-ctx.Done():
			}
		}
	}
	close(tasks)
	wg.Wait()
	for _, name := range plan.Files {
		size := plan.sizes[name]
		sum.Compressed++
		sum.Before += size
		if s, ok := smallest[name]; ok {
			sum.After += s
		} else {
			sum.After += size
		}
	}
	sum.Elapsed = cfg.Now().Sub(start)
	return sum, ctx.Err()
}

// errChanged is the failure of a file modified while it was compressed.
var errChanged = errors.New("changed while being compressed; run again")

// compress writes the sidecar of name in coding c, atomically, and
// reports its size and whether it was kept. A stale sidecar it does not
// replace is removed.
func compress(ctx context.Context, root *os.Root, name string, c encode.Coding, level encode.Level, read func(int64)) (size int64, kept bool, err error) {
	target := encode.Sidecar(name, c)
	src, err := root.Open(name)
	if err != nil {
		return 0, false, err
	}
	defer src.Close()
	before, err := src.Stat()
	if err != nil {
		return 0, false, err
	}
	dir, base := filepath.Split(filepath.FromSlash(target))
	tmp, err := createTemp(root, dir, base)
	if err != nil {
		return 0, false, err
	}
	tmpName := filepath.Join(dir, filepath.Base(tmp.Name()))
	defer func() {
		if tmp != nil {
			tmp.Close()
			root.Remove(tmpName)
		}
	}()
	enc, err := encode.NewWriter(tmp, c, level)
	if err != nil {
		return 0, false, err
	}
	if _, err := io.Copy(enc, &reader{ctx: ctx, r: src, read: read}); err != nil {
		return 0, false, err
	}
	if err := enc.Close(); err != nil {
		return 0, false, err
	}
	after, err := root.Stat(name)
	if err != nil {
		return 0, false, err
	}
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		return 0, false, fmt.Errorf("%s: %w", name, errChanged)
	}
	ti, err := tmp.Stat()
	if err != nil {
		return 0, false, err
	}
	size = ti.Size()
	if float64(size) > float64(before.Size())*(1-MinSaving) {
		// Not worth it; a stale sidecar would only be ignored, so it goes.
		if si, err := root.Stat(target); err == nil && si.ModTime().Before(before.ModTime()) {
			root.Remove(target)
		}
		return size, false, nil
	}
	if err := tmp.Chmod(before.Mode().Perm() & 0o666); err != nil {
		return 0, false, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, false, err
	}
	if err := tmp.Close(); err != nil {
		return 0, false, err
	}
	if err := root.Rename(tmpName, filepath.FromSlash(target)); err != nil {
		return 0, false, err
	}
	tmp = nil
	return size, true, syncDir(root, dir)
}

// createTemp creates a hidden temporary file in dir (inside root), named
// after the sidecar it becomes.
func createTemp(root *os.Root, dir, base string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, fmt.Sprintf(".%s.%d.tmp", base, time.Now().UnixNano()))
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("%s: no free temporary name", base)
}

// syncDir makes a rename in dir durable.
func syncDir(root *os.Root, dir string) error {
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// reader reads a source for compression: it reports progress and stops
// when the run is cancelled.
type reader struct {
	ctx  context.Context
	r    io.Reader
	read func(int64)
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(p)
	if n > 0 && r.read != nil {
		r.read(int64(n))
	}
	return n, err
}

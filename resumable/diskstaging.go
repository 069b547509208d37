package resumable

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tus/tusd/v2/pkg/filestore"
)

// diskStaging is tusd's filestore in a folder: per upload, its bytes (ID),
// its FileInfo (ID.info) and its hash state (ID.sha256).
type diskStaging struct {
	filestore.FileStore
	staged string
}

var _ Staging = (*diskStaging)(nil)

// DiskStaging keeps uploads in the folder dir (an operating-system path),
// created if needed. staged is the same folder as a name of the served
// store, under largo.StateDir, for a store that adopts finished uploads by
// renaming them; "" if dir is not inside the served store.
func DiskStaging(dir, staged string) (Staging, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &diskStaging{FileStore: filestore.New(dir), staged: staged}, nil
}

func (d *diskStaging) binPath(id string) string  { return filepath.Join(d.Path, id) }
func (d *diskStaging) infoPath(id string) string { return d.binPath(id) + ".info" }
func (d *diskStaging) hashPath(id string) string { return d.binPath(id) + ".sha256" }

func (d *diskStaging) Staged(id string) string {
	if d.staged == "" {
		return ""
	}
	return d.staged + "/" + id
}

func (d *diskStaging) Open(_ context.Context, id string) (io.ReadCloser, error) {
	return os.Open(d.binPath(id))
}

func (d *diskStaging) Remove(_ context.Context, id string) error {
	var errs []error
	for _, p := range []string{d.binPath(id), d.infoPath(id), d.hashPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Idle yields the uploads whose bytes and info were last written before
// before.
func (d *diskStaging) Idle(_ context.Context, before time.Time) iter.Seq2[IdleUpload, error] {
	return func(yield func(IdleUpload, error) bool) {
		ents, err := os.ReadDir(d.Path)
		if err != nil {
			yield(IdleUpload{}, err)
			return
		}
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".info")
			if !ok {
				continue
			}
			up := IdleUpload{ID: id}
			for _, p := range []string{d.infoPath(id), d.binPath(id)} {
				if fi, err := os.Stat(p); err == nil {
					up.Last = maxTime(up.Last, fi.ModTime())
					if p == d.binPath(id) {
						up.Size = fi.Size()
					}
				}
			}
			if up.Last.Before(before) && !yield(up, nil) {
				return
			}
		}
	}
}

// Pending removes what a crash left half-made (bytes without their info,
// or the reverse) and returns the bytes held by the uploads that remain.
func (d *diskStaging) Pending(ctx context.Context) (int64, error) {
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		return 0, err
	}
	has := map[string]bool{}
	for _, e := range ents {
		has[e.Name()] = true
	}
	var pending int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sha256") {
			continue // goes with its upload
		}
		id, isInfo := strings.CutSuffix(e.Name(), ".info")
		switch {
		case isInfo && !has[id], !isInfo && !has[id+".info"]:
			if err := d.Remove(ctx, id); err != nil {
				return pending, err
			}
		case !isInfo:
			if fi, err := e.Info(); err == nil {
				pending += fi.Size()
			}
		}
	}
	return pending, nil
}

func (d *diskStaging) LoadHash(_ context.Context, id string) []byte {
	b, err := os.ReadFile(d.hashPath(id))
	if err != nil {
		return nil
	}
	return b
}

func (d *diskStaging) SaveHash(_ context.Context, id string, state []byte) error {
	if state == nil {
		if err := os.Remove(d.hashPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(d.hashPath(id), state, 0o644)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

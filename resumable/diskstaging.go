package resumable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"strings"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/internal/spool"
)

// diskStaging keeps uploads in a folder of the served folder's state area,
// reached through the store's os.Root like every other file, so that no
// name can lead out of it: per upload, its bytes (ID), its FileInfo
// (ID.info, a record of the store's largo.State, written whole) and its
// hash state
// (ID.sha256). A chunk is fsynced before its offset is reported, so an
// offset a client was told survives a crash. A finished upload is renamed
// into place by the store (largo.Adopter), never copied.
type diskStaging struct {
	root  *os.Root
	state largo.State // the same state area, for the records written whole
	dir   string      // the folder, as a name in root: largo.StateDir + "/tus"
}

var (
	_ Staging    = (*diskStaging)(nil)
	_ lastWriter = (*diskStaging)(nil)
)

// DiskStaging keeps uploads in the folder dir of root (a name such as
// ".largo/tus", under largo.StateDir), created if needed; state is the
// records of the same state area (the store's largo.State).
func DiskStaging(root *os.Root, state largo.State, dir string) (Staging, error) {
	if !largo.Below(largo.StateDir, dir) {
		return nil, fmt.Errorf("staging folder %s: not under %s", dir, largo.StateDir)
	}
	if err := root.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &diskStaging{root: root, state: state, dir: dir}, nil
}

func (d *diskStaging) binName(id string) string  { return d.dir + "/" + id }
func (d *diskStaging) infoName(id string) string { return d.binName(id) + ".info" }
func (d *diskStaging) hashName(id string) string { return d.binName(id) + ".sha256" }

func (d *diskStaging) NewUpload(ctx context.Context, info tusd.FileInfo) (tusd.Upload, error) {
	var rnd [16]byte
	rand.Read(rnd[:])
	info.ID = hex.EncodeToString(rnd[:])
	info.Offset = 0
	info.Storage = map[string]string{"Type": "largo-disk"}
	f, err := d.root.OpenFile(d.binName(info.ID), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	u := &diskUpload{d: d, info: info}
	if err := u.writeInfo(ctx); err != nil {
		d.root.Remove(d.binName(info.ID))
		return nil, err
	}
	return u, nil
}

func (d *diskStaging) GetUpload(_ context.Context, id string) (tusd.Upload, error) {
	b, err := d.root.ReadFile(d.infoName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, tusd.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var info tusd.FileInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("upload %s: its info: %w", id, err)
	}
	fi, err := d.root.Stat(d.binName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, tusd.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	info.ID, info.Offset = id, fi.Size()
	return &diskUpload{d: d, info: info}, nil
}

func (d *diskStaging) AsTerminatableUpload(u tusd.Upload) tusd.TerminatableUpload {
	return u.(*diskUpload)
}

func (d *diskStaging) AsLengthDeclarableUpload(u tusd.Upload) tusd.LengthDeclarableUpload {
	return u.(*diskUpload)
}

func (d *diskStaging) Staged(id string) string { return d.binName(id) }

func (d *diskStaging) Open(_ context.Context, id string) (io.ReadCloser, error) {
	return d.root.Open(d.binName(id))
}

func (d *diskStaging) Remove(_ context.Context, id string) error {
	var errs []error
	for _, n := range []string{d.binName(id), d.infoName(id), d.hashName(id)} {
		if err := d.root.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// entries lists the names in the staging folder.
func (d *diskStaging) entries() ([]fs.DirEntry, error) {
	f, err := d.root.Open(d.dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// Idle yields the uploads whose bytes and info were last written before
// before.
func (d *diskStaging) Idle(_ context.Context, before time.Time) iter.Seq2[IdleUpload, error] {
	return func(yield func(IdleUpload, error) bool) {
		ents, err := d.entries()
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
			for _, n := range []string{d.infoName(id), d.binName(id)} {
				if fi, err := d.root.Stat(n); err == nil {
					up.Last = maxTime(up.Last, fi.ModTime())
					if n == d.binName(id) {
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

// LastWrite returns when the upload's bytes or info were last written.
func (d *diskStaging) LastWrite(_ context.Context, id string) (time.Time, error) {
	var last time.Time
	for _, n := range []string{d.infoName(id), d.binName(id)} {
		fi, err := d.root.Stat(n)
		if err != nil {
			return last, err
		}
		last = maxTime(last, fi.ModTime())
	}
	return last, nil
}

// Pending removes what a crash left half-made (bytes without their info,
// or the reverse) and returns the bytes held by the uploads that remain.
func (d *diskStaging) Pending(ctx context.Context) (int64, error) {
	ents, err := d.entries()
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
	b, err := d.root.ReadFile(d.hashName(id))
	if err != nil {
		return nil
	}
	return b
}

func (d *diskStaging) SaveHash(_ context.Context, id string, state []byte) error {
	if state == nil {
		if err := d.root.Remove(d.hashName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return d.root.WriteFile(d.hashName(id), state, 0o600)
}

// diskUpload is one upload of a diskStaging.
type diskUpload struct {
	d    *diskStaging
	info tusd.FileInfo
}

var (
	_ tusd.TerminatableUpload     = (*diskUpload)(nil)
	_ tusd.LengthDeclarableUpload = (*diskUpload)(nil)
)

func (u *diskUpload) GetInfo(context.Context) (tusd.FileInfo, error) { return u.info, nil }

func (u *diskUpload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	return u.d.Open(ctx, u.info.ID)
}

// WriteChunk appends src at the upload's offset. The file's writeback
// starts as it grows, and the chunk is fsynced before its size is
// reported.
func (u *diskUpload) WriteChunk(_ context.Context, offset int64, src io.Reader) (int64, error) {
	f, err := u.d.root.OpenFile(u.d.binName(u.info.ID), os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.Copy(spool.NewWriteback(f), src)
	u.info.Offset = offset + n
	if serr := f.Sync(); err == nil {
		err = serr
	}
	return n, err
}

func (u *diskUpload) FinishUpload(context.Context) error { return nil }

func (u *diskUpload) Terminate(ctx context.Context) error { return u.d.Remove(ctx, u.info.ID) }

func (u *diskUpload) DeclareLength(ctx context.Context, length int64) error {
	u.info.Size, u.info.SizeIsDeferred = length, false
	return u.writeInfo(ctx)
}

// writeInfo writes the upload's FileInfo whole, as a record of the
// store's state area (a reader sees the old one or the new one).
func (u *diskUpload) writeInfo(ctx context.Context) error {
	b, err := json.Marshal(u.info)
	if err != nil {
		return err
	}
	return u.d.state.Put(ctx, strings.TrimPrefix(u.d.infoName(u.info.ID), largo.StateDir+"/"), b)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

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
//
// A placed partial (concat.go) has no bytes of its own: its ID is "p" and
// hex digits, its FileInfo records its offset, and its bytes go into its
// group's file (the group's key, "g" and hex digits), a sparse file of
// the whole length into which every partial of the group writes at its
// place. A final upload that joins the whole group renames that file to
// its own bytes; one that joins other partials has them copied by the
// kernel (copy_file_range) into ID.join, renamed to its bytes once
// complete.
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
	if pl, ok := placementOf(info); ok {
		info.ID = "p" + info.ID
		if err := d.makeGroup(pl); err != nil {
			return nil, err
		}
		u := &diskUpload{d: d, info: info, pl: &pl}
		return u, u.writeInfo(ctx)
	}
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

// makeGroup makes the staged file of a placed partial's group, sparse
// and of the whole length, unless it is there already; one the file
// system cannot make that long is not left behind.
func (d *diskStaging) makeGroup(pl placement) error {
	f, err := d.root.OpenFile(d.binName(pl.Group), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return err
	case fi.Size() == pl.Total:
		return nil
	case fi.Size() != 0:
		return errGroupLength
	}
	if err := f.Truncate(pl.Total); err != nil {
		d.root.Remove(d.binName(pl.Group))
		return err
	}
	return nil
}

func (d *diskStaging) GetUpload(_ context.Context, id string) (tusd.Upload, error) {
	if isGroup(id) {
		return nil, tusd.ErrNotFound
	}
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
	if pl, ok := placementOf(info); ok && strings.HasPrefix(id, "p") {
		// Its bytes are in its group's file (writePiece finds it gone
		// when it expired), its offset in its info.
		info.ID = id
		return &diskUpload{d: d, info: info, pl: &pl}, nil
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
			if isGroup(e.Name()) && !strings.Contains(e.Name(), ".") {
				// A group's file, as idle as the last byte written to it.
				if fi, err := e.Info(); err == nil && fi.ModTime().Before(before) && !yield(IdleUpload{ID: e.Name(), Last: fi.ModTime()}, nil) {
					return
				}
				continue
			}
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
			if strings.HasPrefix(id, "p") {
				up.Size = d.pieceOffset(id)
			}
			if up.Last.Before(before) && !yield(up, nil) {
				return
			}
		}
	}
}

// pieceOffset returns the bytes a placed partial holds, as its info
// records them.
func (d *diskStaging) pieceOffset(id string) int64 {
	b, err := d.root.ReadFile(d.infoName(id))
	if err != nil {
		return 0
	}
	var info tusd.FileInfo
	if json.Unmarshal(b, &info) != nil {
		return 0
	}
	return info.Offset
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
// or the reverse, a join cut short) and returns the bytes held by the
// uploads that remain.
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
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".sha256"):
			continue // goes with its upload
		case strings.HasSuffix(name, ".join"):
			if err := d.root.Remove(d.dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return pending, err
			}
			continue
		case isGroup(name):
			continue // its partials count its bytes; it expires when idle
		case strings.HasPrefix(name, "p") && strings.HasSuffix(name, ".info"):
			id := strings.TrimSuffix(name, ".info")
			up, err := d.GetUpload(ctx, id)
			if err != nil {
				continue
			}
			if u := up.(*diskUpload); u.pl != nil && !has[u.pl.Group] {
				d.Remove(ctx, id) // its group is gone
				continue
			}
			in, _ := up.GetInfo(ctx)
			pending += in.Offset
			continue
		}
		id, isInfo := strings.CutSuffix(name, ".info")
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
	pl   *placement // a placed partial's, whose bytes are its group's
}

var (
	_ tusd.TerminatableUpload     = (*diskUpload)(nil)
	_ tusd.LengthDeclarableUpload = (*diskUpload)(nil)
)

func (u *diskUpload) GetInfo(context.Context) (tusd.FileInfo, error) { return u.info, nil }

func (u *diskUpload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	if u.pl != nil {
		return u.d.ReadPart(ctx, part{ID: u.info.ID, Size: u.info.Offset, Group: u.pl.Group, GroupAt: u.pl.At}, 0)
	}
	return u.d.Open(ctx, u.info.ID)
}

// WriteChunk appends src at the upload's offset. The file's writeback
// starts as it grows, and the chunk is fsynced before its size is
// reported.
func (u *diskUpload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	if u.pl != nil {
		return u.writePiece(ctx, offset, src)
	}
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

// writePiece writes a placed partial's bytes at their place in its
// group's file, fsyncs them, and then records its new offset.
func (u *diskUpload) writePiece(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	f, err := u.d.root.OpenFile(u.d.binName(u.pl.Group), os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, tusd.ErrNotFound // expired meanwhile
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(u.pl.At+offset, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.Copy(spool.NewWriteback(f), io.LimitReader(src, u.info.Size-offset))
	if serr := f.Sync(); serr != nil {
		return 0, serr // nothing of it counts
	}
	if n > 0 {
		u.info.Offset = offset + n
		if ierr := u.writeInfo(context.WithoutCancel(ctx)); ierr != nil {
			u.info.Offset = offset
			return 0, ierr
		}
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

// ReadPart returns a finished partial's bytes from off on: from its
// group's file for a placed one.
func (d *diskStaging) ReadPart(_ context.Context, p part, off int64) (io.ReadCloser, error) {
	name, at := d.binName(p.ID), int64(0)
	if p.Group != "" {
		name, at = d.binName(p.Group), p.GroupAt
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, at+off, p.Size-off), f}, nil
}

// Seal does nothing: a partial's bytes are where it wrote them.
func (d *diskStaging) Seal(context.Context, []part) error { return nil }

// JoinsInPlace is true: a whole group's file becomes the final's bytes.
func (d *diskStaging) JoinsInPlace() bool { return true }

// Join renames a whole group's file to the final's bytes; other partials
// the kernel copies into ID.join (copy_file_range: a reflink where the
// filesystem shares blocks), fsynced and renamed to the final's bytes.
func (d *diskStaging) Join(_ context.Context, final string, parts []part, whole bool) error {
	if whole {
		return d.root.Rename(d.binName(parts[0].Group), d.binName(final))
	}
	tmp := d.binName(final) + ".join"
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = d.copyParts(f, parts)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.root.Rename(tmp, d.binName(final))
	}
	if err != nil {
		d.root.Remove(tmp)
	}
	return err
}

// copyParts copies the partials' bytes into f, each at its offset, from
// file to file: os.File.ReadFrom hands a file and a length to the kernel
// (copy_file_range on Linux).
func (d *diskStaging) copyParts(f *os.File, parts []part) error {
	for _, p := range parts {
		name, at := d.binName(p.ID), int64(0)
		if p.Group != "" {
			name, at = d.binName(p.Group), p.GroupAt
		}
		src, err := d.root.Open(name)
		if err != nil {
			return err
		}
		_, err = src.Seek(at, io.SeekStart)
		if err == nil {
			_, err = f.Seek(p.At, io.SeekStart)
		}
		var n int64
		if err == nil {
			n, err = f.ReadFrom(&io.LimitedReader{R: src, N: p.Size})
		}
		src.Close()
		if err == nil && n != p.Size {
			err = fmt.Errorf("partial upload %s: %d bytes, not %d: %w", p.ID, n, p.Size, io.ErrUnexpectedEOF)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

package disk

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"strings"

	"largo"
)

var (
	_ largo.StateKeeper  = (*Store)(nil)
	_ largo.StateCreator = state{}
	_ largo.StateSwapper = state{}
)

// swapLock is the file, in the state area, whose lock every process
// serving the folder takes to compare a record and replace or remove it.
const swapLock = "swap.lock"

// State implements largo.StateKeeper: records are files under
// largo.StateDir, reached through the store's os.Root like everything
// else, and written whole through a temporary file in TempDir, fsynced and
// renamed into place.
func (s *Store) State() largo.State { return state{s} }

type state struct{ s *Store }

// stateName returns the name, in the root, of a record's key.
func stateName(key string) (string, error) {
	name, err := largo.ParseName("/" + key)
	if err != nil || name == "" || strings.HasPrefix(name, "tmp/") || name == swapLock {
		return "", fmt.Errorf("state key %q: %w", key, largo.ErrInvalidName)
	}
	return largo.StateDir + "/" + name, nil
}

func (st state) Get(_ context.Context, key string) ([]byte, error) {
	name, err := stateName(key)
	if err != nil {
		return nil, err
	}
	b, err := st.s.root.ReadFile(name)
	if err != nil {
		return nil, mapErr(err)
	}
	return b, nil
}

func (st state) Put(_ context.Context, key string, data []byte) error {
	return st.write(key, data, false)
}

// version is the version of a record's bytes (largo.StateSwapper): their
// SHA-256, so that a record written again with other bytes, even at the
// same moment and size, has another.
func version(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// GetVersion implements largo.StateSwapper.
func (st state) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	b, err := st.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return b, version(b), nil
}

// Swap implements largo.StateSwapper: under the swap lock, the record is
// read, compared and replaced by a rename.
func (st state) Swap(ctx context.Context, key string, data []byte, ver string) (string, error) {
	if err := st.swapped(ctx, key, ver, func() error { return st.write(key, data, false) }); err != nil {
		return "", err
	}
	return version(data), nil
}

// DeleteIf implements largo.StateSwapper.
func (st state) DeleteIf(ctx context.Context, key, ver string) error {
	err := st.swapped(ctx, key, ver, func() error { return st.Delete(ctx, key) })
	if errors.Is(err, largo.ErrNotFound) {
		return nil
	}
	return err
}

// swapped runs change if the record key is still of version ver, holding
// the store's mutex and the swap lock file's lock, which every process
// serving the folder takes for its swaps. A missing record is ErrNotFound
// and ErrPrecondition both.
func (st state) swapped(ctx context.Context, key, ver string, change func() error) error {
	if _, err := stateName(key); err != nil {
		return err
	}
	s := st.s
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	if err := s.stateDir(); err != nil {
		return writeErr(err)
	}
	f, err := s.root.OpenFile(largo.StateDir+"/"+swapLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return writeErr(err)
	}
	defer f.Close()
	if err := flock(f); err != nil {
		return writeErr(err)
	}
	defer unflock(f)
	b, err := st.Get(ctx, key)
	if errors.Is(err, largo.ErrNotFound) {
		return fmt.Errorf("state record %s: gone: %w: %w", key, largo.ErrPrecondition, err)
	}
	if err != nil {
		return err
	}
	if version(b) != ver {
		return fmt.Errorf("state record %s: changed: %w", key, largo.ErrPrecondition)
	}
	return change()
}

// Create implements largo.StateCreator: the record is written whole
// beside, then linked into place, which fails when a record is there.
func (st state) Create(_ context.Context, key string, data []byte) error {
	return st.write(key, data, true)
}

// write writes a record through a temporary file, renamed into place, or
// with excl linked into place only where none is.
func (st state) write(key string, data []byte, excl bool) error {
	name, err := stateName(key)
	if err != nil {
		return err
	}
	r := st.s.root
	if err := st.s.stateDir(); err != nil {
		return writeErr(err)
	}
	if err := r.MkdirAll(path.Dir(name), 0o700); err != nil {
		return writeErr(err)
	}
	tmp, f, err := st.s.newTemp()
	if err != nil {
		return err
	}
	err = f.Chmod(0o600) // a record may hold a key: the server's alone
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err == nil && excl:
		err = r.Link(tmp, name)
		r.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("state record %s: %w", key, largo.ErrExist)
		}
	case err == nil:
		err = r.Rename(tmp, name)
	}
	if err != nil {
		r.Remove(tmp)
		return writeErr(err)
	}
	return nil
}

func (st state) Delete(_ context.Context, key string) error {
	name, err := stateName(key)
	if err != nil {
		return err
	}
	if err := st.s.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return writeErr(err)
	}
	return nil
}

// List yields the records under the folder of prefix whose key starts
// with prefix.
func (st state) List(_ context.Context, prefix string) iter.Seq2[largo.Record, error] {
	return func(yield func(largo.Record, error) bool) {
		dir, _ := path.Split(prefix)
		folder := largo.StateDir + "/" + strings.TrimSuffix(dir, "/")
		d, err := st.s.root.Open(folder)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			yield(largo.Record{}, mapErr(err))
			return
		}
		defer d.Close()
		for {
			ents, err := d.ReadDir(256)
			for _, e := range ents {
				key := dir + e.Name()
				if !strings.HasPrefix(key, prefix) || !e.Type().IsRegular() || key == swapLock {
					continue
				}
				fi, err := e.Info()
				if err != nil {
					continue // removed meanwhile
				}
				if !yield(largo.Record{Key: key, ModTime: fi.ModTime()}, nil) {
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					yield(largo.Record{}, err)
				}
				return
			}
		}
	}
}

// stateDir makes the state area, or makes it the server's alone if it was
// made readable by others (by an older version, or by hand): it holds the
// share key and the records of links, uploads and locks.
func (s *Store) stateDir() error {
	s.stateOnce.Do(func() {
		if s.stateErr = s.root.Mkdir(largo.StateDir, 0o700); errors.Is(s.stateErr, fs.ErrExist) {
			s.stateErr = s.root.Chmod(largo.StateDir, 0o700)
		}
	})
	return s.stateErr
}

var _ largo.StatePager = state{}

// Page implements largo.StatePager: the folder of prefix is read once,
// keeping only the limit smallest keys after after (a heap), so a page
// costs one pass over the folder's names and holds no more than a page.
func (st state) Page(ctx context.Context, prefix, after string, limit int) ([]largo.Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	h := &keyHeap{}
	for rec, err := range st.List(ctx, prefix) {
		if err != nil {
			return nil, err
		}
		if rec.Key <= after {
			continue
		}
		if h.Len() < limit {
			heap.Push(h, rec)
		} else if rec.Key < (*h)[0].Key {
			(*h)[0] = rec
			heap.Fix(h, 0)
		}
	}
	out := make([]largo.Record, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(largo.Record)
	}
	return out, nil
}

// keyHeap holds records with the greatest key on top.
type keyHeap []largo.Record

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i].Key > h[j].Key }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(largo.Record)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

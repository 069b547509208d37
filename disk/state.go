package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"path"
	"strings"

	"largo"
)

var (
	_ largo.StateKeeper  = (*Store)(nil)
	_ largo.StateCreator = state{}
)

// State implements largo.StateKeeper: records are files under
// largo.StateDir, reached through the store's os.Root like everything
// else, and written whole through a temporary file in TempDir, fsynced and
// renamed into place.
func (s *Store) State() largo.State { return state{s} }

type state struct{ s *Store }

// stateName returns the name, in the root, of a record's key.
func stateName(key string) (string, error) {
	name, err := largo.ParseName("/" + key)
	if err != nil || name == "" || strings.HasPrefix(name, "tmp/") {
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
	if err := r.MkdirAll(path.Dir(name), 0o755); err != nil {
		return writeErr(err)
	}
	tmp, f, err := st.s.newTemp()
	if err != nil {
		return err
	}
	_, err = f.Write(data)
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
				if !strings.HasPrefix(key, prefix) || !e.Type().IsRegular() {
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

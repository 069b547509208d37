package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"largo"
)

// An earlier release kept what it knew of a file in a record per kind,
// each keyed by the SHA-256 of the file's name under its own prefix: the
// digest (digests/), a sidecar's source (sidecars/), the quota's owner
// (quota/owners/) and a drop box's expiry (expiry/, which stays, as the
// index of the files that expire). Files reads them once into the one
// record of the file and drops them: each file as it is first asked for,
// and all of them in one pass, Migrate, which the server runs at start.
// Until that pass has been made once (a record says so), a file without
// a record of its own is looked for in the old layout too.

// migratedKey is the record that says the old layout is gone.
const migratedKey = "migrated/files-v1"

// The old layout's prefixes, in the order their records are merged.
const (
	oldOwners   = "quota/owners/"
	oldDigests  = "digests/"
	oldSidecars = "sidecars/"
	oldExpiry   = "expiry/"
)

type oldLayout struct {
	s    *Store
	done atomic.Bool

	mu     sync.Mutex
	probed bool // the state was looked at once for old records
}

func newOldLayout(s *Store) *oldLayout { return &oldLayout{s: s} }

// pending reports whether old records may still be there. The first
// call looks once: a store that says it migrated, or holds no record of
// the old layout at all (a new one), has none to read on the way, so
// that a file without a record costs no read of the four old prefixes.
func (o *oldLayout) pending(ctx context.Context) bool {
	if o.done.Load() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.probed || o.done.Load() {
		return !o.done.Load()
	}
	if _, err := o.s.st.Get(ctx, migratedKey); err == nil {
		o.done.Store(true)
		return false
	} else if !errors.Is(err, largo.ErrNotFound) {
		return true // look again at the next call
	}
	for _, p := range []string{oldOwners, oldDigests, oldSidecars, oldExpiry} {
		for _, err := range o.s.st.List(ctx, p) {
			if err == nil {
				o.probed = true
			}
			return true // there is one (or the look failed: look again)
		}
	}
	o.done.Store(true)
	return false
}

// oldRecord is any of the old layout's records: each has a name and a
// version, and some of the rest.
type oldRecord struct {
	Name    string    `json:"name"`
	ETag    string    `json:"etag"`
	SHA256  string    `json:"sha256"`
	Source  string    `json:"source"`
	User    string    `json:"user"`
	Size    int64     `json:"size"`
	Expires time.Time `json:"expires"`
	Link    string    `json:"link"`
}

// read returns the old record of name under prefix.
func (o *oldLayout) read(ctx context.Context, prefix, name string) (oldRecord, bool) {
	b, err := o.s.st.Get(ctx, prefix+NameKey(name))
	if err != nil {
		return oldRecord{}, false
	}
	var r oldRecord
	if json.Unmarshal(b, &r) != nil || r.Name != name || r.ETag == "" {
		return oldRecord{}, false
	}
	return r, true
}

// migrateOne makes the record of name from its old records, if it has
// any, and drops them: ErrNotFound when it has none.
func (o *oldLayout) migrateOne(ctx context.Context, f *Files, name string) (File, error) {
	found := map[string]oldRecord{}
	for _, p := range []string{oldOwners, oldDigests, oldSidecars, oldExpiry} {
		if r, ok := o.read(ctx, p, name); ok {
			found[p] = r
		}
	}
	if len(found) == 0 {
		return File{}, fmt.Errorf("record of %s: %w", name, largo.ErrNotFound)
	}
	// The version: the owner's (what the quotas counted), else the
	// first there is; what the others say holds only of that version.
	rec := File{Name: name}
	for _, p := range []string{oldOwners, oldDigests, oldSidecars, oldExpiry} {
		if r, ok := found[p]; ok && rec.ETag == "" {
			rec.ETag, rec.Size = r.ETag, r.Size
		}
	}
	if r, ok := found[oldOwners]; ok {
		rec.Owner = r.User
	}
	if r, ok := found[oldDigests]; ok && r.ETag == rec.ETag {
		rec.SHA256 = r.SHA256
	}
	if r, ok := found[oldSidecars]; ok && r.ETag == rec.ETag {
		rec.Source = r.Source
	}
	if r, ok := found[oldExpiry]; ok && r.ETag == rec.ETag {
		rec.Expires, rec.Link = r.Expires, r.Link
	}
	// The sidecars made of this version, which the old layout kept only
	// beside themselves (migrated already, or not yet).
	for _, ext := range largo.SidecarExts {
		side := name + ext
		if r, ok := o.read(ctx, oldSidecars, side); ok && r.Source == rec.ETag {
			rec.Sidecars = append(rec.Sidecars, ext)
		} else if s, err := f.t.Get(ctx, NameKey(side)); err == nil && s.Name == side && s.Source == rec.ETag {
			rec.Sidecars = append(rec.Sidecars, ext)
		}
	}
	// Where a record of the new layout is already there (written since),
	// it wins; the old ones only go.
	err := f.t.Create(ctx, NameKey(name), rec)
	if err != nil && !errors.Is(err, largo.ErrExist) {
		return File{}, err
	}
	o.drop(ctx, name)
	if errors.Is(err, largo.ErrExist) {
		rec, err := f.t.Get(ctx, NameKey(name))
		return checked(name, rec, err)
	}
	return rec, nil
}

// drop removes the old records of name but the expiry index's.
func (o *oldLayout) drop(ctx context.Context, name string) {
	for _, p := range []string{oldOwners, oldDigests, oldSidecars} {
		o.s.st.Delete(ctx, p+NameKey(name))
	}
}

// Migrate reads every record of the old layout into the records of
// files, once for the store (a record remembers it is done), and returns
// how many files it migrated. The server runs it at start, in the
// background; a file asked for meanwhile is migrated on the way.
func (f *Files) Migrate(ctx context.Context, log *slog.Logger) (int, error) {
	o := f.old
	if _, err := o.s.st.Get(ctx, migratedKey); err == nil {
		o.done.Store(true)
		return 0, nil
	} else if !errors.Is(err, largo.ErrNotFound) {
		return 0, err
	}
	n := 0
	for _, p := range []string{oldOwners, oldDigests, oldSidecars, oldExpiry} {
		for r, err := range o.s.st.List(ctx, p) {
			if err != nil {
				return n, err
			}
			if err := ctx.Err(); err != nil {
				return n, err
			}
			b, err := o.s.st.Get(ctx, r.Key)
			if err != nil {
				continue // gone meanwhile
			}
			var old oldRecord
			if json.Unmarshal(b, &old) != nil || old.Name == "" || p+NameKey(old.Name) != r.Key {
				continue
			}
			if _, err := f.t.Get(ctx, NameKey(old.Name)); err == nil {
				o.drop(ctx, old.Name) // migrated already
				continue
			}
			if _, err := o.migrateOne(ctx, f, old.Name); err == nil {
				n++
			}
		}
	}
	if err := o.s.st.Put(ctx, migratedKey, []byte(`{"done":true}`)); err != nil {
		return n, err
	}
	o.done.Store(true)
	if n > 0 && log != nil {
		log.Info("records of files migrated to one record per file", "files", n)
	}
	return n, nil
}

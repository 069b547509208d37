package s3api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"largo"
	"largo/ingest"
	"largo/internal/keylock"
	"largo/record"
)

// Uploads keeps the multipart uploads of one store: each upload's record
// and its parts' records in the record layer (record.Table, in the
// store's state area, where every instance serving the store finds
// them), the parts' bytes in a staging of the store's own (a folder's
// state area, or a multipart upload of the bucket), and the holds on the
// quotas of the uploads in progress. Make one with NewUploads; it is safe
// for concurrent use.
type Uploads struct {
	records *record.Store
	uploads *record.Table[upload]
	parts   *record.Table[part] // keyed ID.NNNNN: an upload's parts in order
	staging staging
	expiry  time.Duration
	now     func() time.Time
	log     *slog.Logger

	mu   sync.Mutex
	held map[string]*ingest.Held // by upload ID: the quotas' holds of parts staged
	// staged are the bytes the parts of an upload with a hold hold.
	staged map[string]int64
	slots  map[string]bool // upload/part slots being written, on a folder
	locks  keylock.Set     // by upload ID: its digest advanced by one at a time
}

// UploadsConfig configures Uploads. Store and Records are required.
type UploadsConfig struct {
	// Store is the served store itself, not the gate's: its state area
	// holds the staged parts (a folder), or it begins and takes the
	// multipart uploads the parts go to (a bucket).
	Store largo.Store
	// Records is the record layer of the store's state area.
	Records *record.Store
	// Expiry is how long an upload may receive nothing before it is
	// removed, and how long a completed upload's answer is kept for a
	// Complete sent again; zero means 24 hours.
	Expiry time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives what fails no request; nil discards it.
	Logger *slog.Logger
}

// upload is the record of a multipart upload.
type upload struct {
	// Name is the file it makes, and Key the key it was created for.
	Name string `json:"name"`
	Key  string `json:"key"`
	// Owner is its principal (gate.Principal.String()): only it may add
	// parts, list, complete or abort it.
	Owner   string    `json:"owner"`
	Created time.Time `json:"created"`
	// Meta is the object's metadata, Hooked what the pre-upload hook
	// answered at its creation.
	Meta   map[string]string `json:"meta,omitempty"`
	Hooked map[string]string `json:"hooked,omitempty"`
	// Checksum is the algorithm of the parts' checksums, "" for none.
	Checksum string `json:"checksum,omitempty"`
	// Stride, on a folder, is the size of each part's place in the
	// upload's staged file: part n's bytes go at (n-1)*Stride when they
	// fit (disk.go). Zero until a part fixes it.
	Stride int64 `json:"stride,omitempty"`
	// Assembly is, on a bucket, the multipart upload of the bucket the
	// parts go to.
	Assembly string `json:"assembly,omitempty"`
	// Hashed is the SHA-256 of the file's first parts, 1 to Hashed.N,
	// computed as they come in order (disk.go), nil for none yet.
	Hashed *prefixHash `json:"hashed,omitempty"`
	// Done is the ETag of the file a Complete made; the record stays,
	// for a Complete sent again, until it expires.
	Done string `json:"done,omitempty"`
	// DoneParts is the digest of the parts Complete listed.
	DoneParts string `json:"done_parts,omitempty"`
}

// prefixHash is the SHA-256 of an upload's first parts.
type prefixHash struct {
	N     int    `json:"n"`     // parts 1 to N are hashed
	ETags string `json:"etags"` // the digest of their ETags, in order
	Size  int64  `json:"size"`  // their bytes
	State []byte `json:"state"` // the hash's state
}

// part is the record of a part.
type part struct {
	N        int       `json:"n"`
	Size     int64     `json:"size"`
	ETag     string    `json:"etag"`
	Checksum string    `json:"checksum,omitempty"`
	Time     time.Time `json:"time"`
	// Side, on a folder, is the name of the file of its own the part is
	// in, under the staging; "" when it is at its place in the upload's
	// staged file.
	Side string `json:"side,omitempty"`
}

// staging keeps the bytes of the parts of uploads.
type staging interface {
	// begin readies the staging of the new upload id of up.Name, and
	// sets in up what it keeps of it (a bucket's multipart upload).
	begin(ctx context.Context, id string, up *upload) error
	// put stores the n-th part, of size bytes of r, with slot true when
	// it goes to its place in the upload's file (a folder); it returns
	// what the part's record keeps of where it is.
	put(ctx context.Context, id string, up *upload, n int, size int64, r io.Reader, slot bool) (part, error)
	// assemble makes the bytes of parts, in order, ready to be placed.
	assemble(ctx context.Context, id string, up *upload, parts []part) (ingest.Staged, error)
	// drop removes a part's bytes that a new one under its number
	// replaced.
	drop(ctx context.Context, id string, p part)
	// remove removes everything staged of the upload id.
	remove(ctx context.Context, id string, up *upload) error
	// slots reports whether parts go to their places in one file.
	slots() bool
}

// folderStore is a store on a local folder, which lends its os.Root to
// what keeps files in its state area.
type folderStore interface {
	largo.StateKeeper
	Root() *os.Root
}

// bucketStore is a store on a bucket, whose own multipart uploads take
// the parts (package s3).
type bucketStore interface {
	largo.AssemblyAdopter
	BeginAssembly(ctx context.Context, name string) (key, id string, err error)
	WriteAssemblyPart(ctx context.Context, name, id string, n int32, r io.Reader, size int64) (string, error)
	AbortAssembly(ctx context.Context, name, id string) error
}

// NewUploads returns the Uploads of cfg's store: staged in the folder's
// state area, or in multipart uploads of the bucket; an error wrapping
// largo.ErrUnsupported for a store that offers neither.
func NewUploads(cfg UploadsConfig) (*Uploads, error) {
	if cfg.Expiry <= 0 {
		cfg.Expiry = 24 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	u := &Uploads{
		records: cfg.Records,
		uploads: record.NewTable[upload](cfg.Records, uploadsPrefix, record.TableOptions{}),
		parts:   record.NewTable[part](cfg.Records, partsPrefix, record.TableOptions{}),
		expiry:  cfg.Expiry,
		now:     cfg.Now,
		log:     cfg.Logger,
		held:    map[string]*ingest.Held{},
		staged:  map[string]int64{},
		slots:   map[string]bool{},
	}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	switch st := cfg.Store.(type) {
	case folderStore:
		d, err := newDiskStaging(st.Root())
		if err != nil {
			return nil, err
		}
		u.staging = d
	case bucketStore:
		u.staging = &bucketStaging{st: st}
	default:
		return nil, fmt.Errorf("S3 multipart uploads on this store: %w", largo.ErrUnsupported)
	}
	return u, nil
}

// The tables' prefixes in the state area.
const (
	uploadsPrefix = "s3api/uploads/"
	partsPrefix   = "s3api/parts/"
)

// partKey is the key of part n of the upload id: the ID and the number,
// in digits that sort.
func partKey(id string, n int) string { return fmt.Sprintf("%s.%05d", id, n) }

// pageParts returns at most limit records of the parts of the upload
// id, in order, after part after (0: from the first).
func (u *Uploads) pageParts(ctx context.Context, id string, after, limit int) ([]record.Entry[part], error) {
	from := id + "."
	if after > 0 {
		from = partKey(id, after)
	}
	page, err := u.parts.Page(ctx, from, limit)
	for i, e := range page {
		if !strings.HasPrefix(e.Key, id+".") {
			return page[:i], err // the next upload's
		}
	}
	return page, err
}

// get returns the upload id of owner, or errNoSuchUpload: one that is
// gone, done, or another's (which is not told).
func (u *Uploads) get(ctx context.Context, id, owner string) (upload, error) {
	if !validUploadID(id) {
		return upload{}, errNoSuchUpload
	}
	up, err := u.uploads.Get(ctx, id)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return up, errNoSuchUpload
	case err != nil:
		return up, err
	case up.Owner != owner:
		return up, errNoSuchUpload
	}
	return up, nil
}

// validUploadID reports whether id can be an upload's: 32 hex digits.
func validUploadID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// allParts returns the records of the parts of the upload id, in order.
func (u *Uploads) allParts(ctx context.Context, id string) ([]part, error) {
	var out []part
	after := 0
	for {
		page, err := u.pageParts(ctx, id, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			out = append(out, e.Value)
		}
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].Value.N
	}
}

// dropParts removes the records of the parts of the upload id.
func (u *Uploads) dropParts(ctx context.Context, id string) error {
	var errs []error
	for {
		page, err := u.pageParts(ctx, id, 0, 1000)
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := u.parts.Delete(ctx, e.Key); err != nil {
				errs = append(errs, err)
			}
		}
		if len(page) < 1000 || len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
}

// forget removes the records of the upload id and what is staged of it,
// and ends its hold on the quotas.
func (u *Uploads) forget(ctx context.Context, id string, up *upload) error {
	u.release(id)
	if err := errors.Join(u.staging.remove(ctx, id, up), u.dropParts(ctx, id)); err != nil {
		return err
	}
	return u.uploads.Delete(ctx, id)
}

// hold returns the hold on the quotas of the parts of the upload id and
// the bytes its parts hold: made for ctx's principal (its owner) when it
// has none yet in this process, the bytes then counted from its parts'
// records, once.
func (u *Uploads) hold(ctx context.Context, wr *ingest.Pipeline, id, name string) (*ingest.Held, int64, error) {
	u.mu.Lock()
	h, n := u.held[id], u.staged[id]
	u.mu.Unlock()
	if h != nil {
		return h, n, nil
	}
	parts, err := u.allParts(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	n = 0
	for _, p := range parts {
		n += p.Size
	}
	if h, err = wr.Hold(ctx, name, n); err != nil {
		return nil, 0, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if other := u.held[id]; other != nil {
		h.Release()
		return other, u.staged[id], nil
	}
	u.held[id], u.staged[id] = h, n
	return h, n, nil
}

// grew records that the parts of the upload id hold delta bytes more.
func (u *Uploads) grew(id string, delta int64) {
	u.mu.Lock()
	if _, ok := u.held[id]; ok {
		u.staged[id] += delta
	}
	u.mu.Unlock()
}

// release ends the hold on the quotas of the upload id, if any.
func (u *Uploads) release(id string) {
	u.mu.Lock()
	h := u.held[id]
	delete(u.held, id)
	delete(u.staged, id)
	u.mu.Unlock()
	if h != nil {
		h.Release()
	}
}

// takeSlot reserves the place of part n of the upload id in its file,
// for one writer at a time: false when another is writing there.
func (u *Uploads) takeSlot(id string, n int) (release func(), ok bool) {
	k := partKey(id, n)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.slots[k] {
		return nil, false
	}
	u.slots[k] = true
	return func() {
		u.mu.Lock()
		delete(u.slots, k)
		u.mu.Unlock()
	}, true
}

// Sweep removes the uploads that have received nothing for the expiry,
// with their parts and holds, and the records of completed uploads kept
// that long. It is the server's worker's (its period is the caller's).
func (u *Uploads) Sweep(ctx context.Context) (int, error) {
	before := u.now().Add(-u.expiry)
	n := 0
	for e, err := range u.uploads.All(ctx) {
		if err != nil {
			if errors.Is(err, largo.ErrNotFound) {
				continue
			}
			return n, err
		}
		if !u.idleSince(ctx, e, before) {
			continue
		}
		up := e.Value
		if err := u.forget(ctx, e.Key, &up); err != nil {
			u.log.Warn("s3: removing an expired multipart upload", "upload", e.Key, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// idleSince reports whether the upload e has received nothing since
// before: its record and its parts' all older.
func (u *Uploads) idleSince(ctx context.Context, e record.Entry[upload], before time.Time) bool {
	if !e.ModTime.Before(before) || !e.Value.Created.Before(before) {
		return false
	}
	if e.Value.Done != "" {
		return true
	}
	for after := 0; ; {
		page, err := u.pageParts(ctx, e.Key, after, 1000)
		if err != nil {
			return false
		}
		for _, p := range page {
			if !p.ModTime.Before(before) {
				return false
			}
		}
		if len(page) < 1000 {
			return true
		}
		after = page[len(page)-1].Value.N
	}
}

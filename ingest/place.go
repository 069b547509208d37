package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"largo"
)

// Staged is the whole of a finished resumable upload, held by a staging.
type Staged struct {
	// Name is where the bytes are in the served store, under
	// largo.StateDir, for a store that adopts them without a copy
	// (largo.Adopter); "" when they are held elsewhere.
	Name string
	// Assembly, when not "", is the ID of an assembly of the file at the
	// target's own name that holds the bytes (largo.AssemblyAdopter: on
	// a bucket, a multipart upload whose parts are the pieces of a
	// parallel upload), which the store completes in place; Name and
	// Open are then not used.
	Assembly string
	// Size is their length.
	Size int64
	// SHA256 is their SHA-256 when it was computed as they arrived; nil
	// makes Place read them to compute it, but for an Assembly, whose
	// bytes cannot be read before it is completed (the parts of an S3
	// multipart upload on a bucket, which arrive in any order): it is
	// placed without a digest, which the digests' scan adds later.
	SHA256 []byte
	// Open returns the bytes, for a store that copies them or to hash
	// them.
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// Place commits a finished resumable upload to t.Name, exactly like a
// write of its bytes: the name policy, the digest and the condition apply
// (the size and space were admitted when the upload was created, and its
// bytes are stored already). The store adopts the staged bytes where it
// can, and receives a copy otherwise.
func (p *Pipeline) Place(ctx context.Context, t Target, s Staged) (Result, error) {
	if err := p.admitPlace(ctx, &t); err != nil {
		return Result{}, err
	}
	p.priorVersion(ctx, &t)
	// The quotas are asked again: other writes may have filled them
	// since the upload was created.
	c, err := p.claim(ctx, t.Name, s.Size, true, nil)
	if err != nil {
		return Result{}, err
	}
	w, err := p.adopt(ctx, t, s)
	copying := err == nil && w == nil
	if copying {
		t.Size = s.Size
		w, err = p.beginCopy(ctx, t)
	}
	if err != nil {
		if c != nil {
			c.Release()
		}
		return Result{}, err
	}
	w.claim = c
	if copying {
		if err := w.copyFrom(ctx, s); err != nil {
			w.Abort()
			return Result{}, err
		}
	}
	return w.Commit(ctx)
}

// admitPlace is the admission of bytes already stored: the name and
// whether the store can write under the condition.
func (p *Pipeline) admitPlace(ctx context.Context, t *Target) error {
	if p.cr == nil {
		return fmt.Errorf("write: %w", largo.ErrUnsupported)
	}
	if err := CheckName(t.Name); err != nil {
		return err
	}
	if err := p.decide(ctx, t); err != nil {
		return err
	}
	if err := p.checkLock(ctx, t.Name, false, t.Tokens); err != nil {
		return err
	}
	return p.checkCond(t.Cond)
}

// adopt returns a Write of the staged bytes taken by the store where they
// are, or nil when the store cannot.
func (p *Pipeline) adopt(ctx context.Context, t Target, s Staged) (*Write, error) {
	opt := p.createOptions(&t, s.Size)
	var take func() (largo.Upload, error)
	if s.Assembly != "" {
		a, ok := p.cfg.Store.(largo.AssemblyAdopter)
		if !ok {
			return nil, fmt.Errorf("an assembled upload on a store that cannot adopt it: %w", largo.ErrUnsupported)
		}
		take = func() (largo.Upload, error) { return a.AdoptAssembly(ctx, t.Name, s.Assembly, opt) }
	} else {
		a, ok := p.cfg.Store.(largo.Adopter)
		if !ok || s.Name == "" {
			return nil, nil
		}
		if !largo.Below(largo.StateDir, s.Name) {
			return nil, fmt.Errorf("%s: %w: not under %s", s.Name, largo.ErrInvalidName, largo.StateDir)
		}
		if _, err := largo.ParseName("/" + s.Name); err != nil {
			return nil, err
		}
		take = func() (largo.Upload, error) { return a.Adopt(ctx, t.Name, s.Name, opt) }
	}
	sum := s.SHA256
	unhashed := len(sum) != sha256.Size && s.Assembly != ""
	if unhashed {
		sum = nil
		if t.SHA256 != nil {
			return nil, fmt.Errorf("an assembled upload without its digest, to check against one: %w", largo.ErrUnsupported)
		}
	} else if len(sum) != sha256.Size {
		var err error
		if sum, err = hashStaged(ctx, s); err != nil {
			return nil, err
		}
	}
	if t.SHA256 != nil && string(t.SHA256) != string(sum) {
		return nil, &largo.DigestError{Name: t.Name, SHA256: sum} // and the store untouched
	}
	u, err := take()
	if errors.Is(err, largo.ErrUnsupported) && s.Assembly == "" {
		return nil, nil // a store behind a wrapper that cannot after all: copied
	}
	if err != nil {
		return nil, CondErr(targetErr(err), t.Cond)
	}
	return &Write{p: p, t: t, u: u, sum: sum, n: s.Size, unhashed: unhashed}, nil
}

// beginCopy opens an upload for a copy of bytes already stored: no space
// is checked or held (on a store with free space to report, the staging
// is another store, or the bytes would have been adopted).
func (p *Pipeline) beginCopy(ctx context.Context, t Target) (*Write, error) {
	u, err := p.cr.Create(ctx, t.Name, p.createOptions(&t, t.Size))
	if err != nil {
		return nil, CondErr(targetErr(err), t.Cond)
	}
	// The size was admitted at the upload's creation, under the limit of
	// then: the copy is bounded by the size alone.
	return &Write{p: p, t: t, u: u, h: sha256.New(), room: t.Size}, nil
}

// copyFrom receives the staged bytes.
func (w *Write) copyFrom(ctx context.Context, s Staged) error {
	r, err := s.Open(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	n, err := w.ReadFrom(r)
	if err == nil && n != s.Size {
		err = fmt.Errorf("staged upload holds %d bytes, not %d: %w", n, s.Size, io.ErrUnexpectedEOF)
	}
	return err
}

// hashStaged reads staged bytes to compute their SHA-256.
func hashStaged(ctx context.Context, s Staged) ([]byte, error) {
	r, err := s.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	h := sha256.New()
	if _, err := io.CopyBuffer(h, r, *bp); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// BeginCopy admits a copy of the file src to t.Name, made by the store
// itself (largo.Copier: in-kernel on a folder, server-side on a bucket)
// without its bytes passing through the pipeline: t is admitted like any
// write (the name, locks, conditions, the size, t.Size, against the limit
// and the free space). The Write takes no bytes: Commit or Abort it; the
// copy carries the source's recorded digest (Config.Digests). A
// store without largo.Copier refuses it with ErrUnsupported, and the
// caller copies through Begin.
func (p *Pipeline) BeginCopy(ctx context.Context, t Target, src string) (*Write, error) {
	cp, ok := p.cfg.Store.(largo.Copier)
	if !ok {
		return nil, fmt.Errorf("copy: %w", largo.ErrUnsupported)
	}
	if err := p.admit(ctx, &t); err != nil {
		return nil, err
	}
	if _, _, err := p.room(ctx, t.Name, t.Size, false); err != nil {
		return nil, err
	}
	if err := p.ask(ctx, &t); err != nil {
		return nil, err // a copy makes a file: the hook is asked as for an upload
	}
	c, err := p.claim(ctx, t.Name, t.Size, true, t.known())
	if err != nil {
		return nil, err
	}
	var srcETag string // the version copied, whose digest the copy carries
	if p.cfg.Files != nil {
		if in, err := p.cfg.Store.Stat(ctx, src); err == nil && !in.IsDir {
			srcETag = in.ETag
		}
	}
	u, err := cp.Copy(ctx, t.Name, src, p.createOptions(&t, t.Size))
	if err != nil {
		if c != nil {
			c.Release()
		}
		return nil, CondErr(targetErr(err), t.Cond)
	}
	return &Write{p: p, t: t, u: u, n: max(t.Size, 0), copied: true, src: src, srcETag: srcETag, claim: c}, nil
}

package digests

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"time"

	"golang.org/x/time/rate"

	"largo"
)

// Hashing files that arrived another way (copied onto the disk, put into
// the bucket directly) is the one place a file is read to learn its
// digest: never on a request's path, always at a capped rate, and only
// for files with no record of their current version.

// Event is what Hash tells of one file.
type Event struct {
	// Name is the file's name in the store.
	Name string
	// Size is its size.
	Size int64
	// SHA256 is its digest, when it was hashed or already recorded.
	SHA256 []byte
	// CRC32 is its CRC-32 (IEEE), when SHA256 is set.
	CRC32 uint32
	// Fresh reports that a digest and a CRC-32 of its current version
	// were recorded already: it was not read.
	Fresh bool
	// Err is why it got no digest: it could not be read or recorded, or
	// it changed while it was read (ErrChanged).
	Err error
}

// ErrChanged is a file that changed while it was hashed: its digest
// would describe no version of it, and is not recorded.
var ErrChanged = errors.New("changed while it was read")

// Summary counts what Hash did.
type Summary struct {
	Hashed, Fresh, Failed int
	// Bytes is what was read.
	Bytes int64
}

// HashOptions govern Hash.
type HashOptions struct {
	// Rate caps the bytes read per second, all files together; zero
	// means no cap.
	Rate int64
	// Force hashes files whose current version has a record already.
	Force bool
	// Event, when not nil, is told of each file.
	Event func(Event)
	// Read, when not nil, is told of the bytes read as they are (from
	// the goroutine that called Hash), for a progress bar.
	Read func(n int64)
}

// Hash records the digest and the CRC-32 of the file name, or of every
// file below the folder name ("" is the whole store), that has not both
// for its current version (a file uploaded through largo has its digest,
// and gets its CRC-32 here), by reading it from st (unguarded: the keeper's own store)
// within the rate. A file is recorded only if it has the same ETag after
// it was read as before. Links are passed over (what one leads to is
// recorded where it is). It stops when ctx is done; a folder that cannot
// be listed is passed over, and its error returned at the end.
func (k *Keeper) Hash(ctx context.Context, name string, opt HashOptions) (Summary, error) {
	var sum Summary
	if k == nil || k.files == nil || k.store == nil {
		return sum, fmt.Errorf("digests: %w: the store keeps no records", largo.ErrUnsupported)
	}
	h := &hasher{k: k, opt: opt}
	if opt.Rate > 0 {
		burst := int(min(max(opt.Rate/8, 64<<10), 4<<20))
		h.lim = rate.NewLimiter(rate.Limit(opt.Rate), burst)
		h.chunk = min(256<<10, burst)
	}
	var errs []error
	err := largo.WalkDir(ctx, k.store, name, func(n string, in largo.Info, err error) error {
		switch {
		case err != nil && n == name:
			return err
		case err != nil:
			errs = append(errs, fmt.Errorf("listing %s: %w", n, err))
		case !in.IsDir && !in.Link:
			h.file(ctx, n, &sum)
		}
		return nil
	})
	if ctx.Err() != nil {
		return sum, ctx.Err()
	}
	return sum, errors.Join(append(errs, err)...)
}

// hasher reads files for Hash.
type hasher struct {
	k     *Keeper
	opt   HashOptions
	lim   *rate.Limiter // nil: no cap
	chunk int
	buf   []byte
}

// file hashes one file, unless its version is recorded, and tells.
func (h *hasher) file(ctx context.Context, name string, s *Summary) {
	ev := h.hash(ctx, name, s)
	switch {
	case ev.Err != nil && ctx.Err() != nil:
		return // stopped, not failed
	case ev.Err != nil:
		s.Failed++
	case ev.Fresh:
		s.Fresh++
	default:
		s.Hashed++
	}
	if h.opt.Event != nil {
		h.opt.Event(ev)
	}
}

func (h *hasher) hash(ctx context.Context, name string, s *Summary) Event {
	k := h.k
	ev := Event{Name: name}
	f, err := k.store.Open(ctx, name)
	if err != nil {
		ev.Err = err
		return ev
	}
	defer f.Close()
	in := f.Info()
	ev.Size = in.Size
	if in.ETag == "" {
		ev.Err = fmt.Errorf("%s: the store gives it no ETag to record its digest with: %w", name, largo.ErrUnsupported)
		return ev
	}
	if !h.opt.Force {
		if rec, err := k.peekRecord(ctx, name, in.ETag); err == nil && rec.Sum() != nil {
			if crc, ok := rec.CRC(); ok {
				ev.SHA256, ev.CRC32, ev.Fresh = rec.Sum(), crc, true
				return ev
			}
		}
	}
	sha, crc := sha256.New(), crc32.NewIEEE()
	n, err := h.copy(ctx, io.MultiWriter(sha, crc), f)
	s.Bytes += n
	if err != nil {
		ev.Err = fmt.Errorf("reading %s: %w", name, err)
		return ev
	}
	if n != in.Size {
		ev.Err = fmt.Errorf("%s: %w (%d bytes read of %d)", name, ErrChanged, n, in.Size)
		return ev
	}
	now, err := k.store.Stat(ctx, name)
	if err != nil || now.ETag != in.ETag {
		ev.Err = fmt.Errorf("%s: %w", name, ErrChanged)
		return ev
	}
	ev.SHA256, ev.CRC32 = sha.Sum(nil), crc.Sum32()
	if err := k.record(ctx, name, in, ev.SHA256, ev.CRC32); err != nil {
		ev.Err = fmt.Errorf("recording the digest of %s: %w", name, err)
		return ev
	}
	return ev
}

// copy reads r into w within the rate.
func (h *hasher) copy(ctx context.Context, w io.Writer, r io.Reader) (int64, error) {
	if h.buf == nil {
		h.buf = make([]byte, 256<<10)
	}
	if h.opt.Read != nil {
		w = io.MultiWriter(w, readCounter(h.opt.Read))
	}
	if h.lim == nil {
		return io.CopyBuffer(w, onlyReader{r}, h.buf)
	}
	var total int64
	for {
		if err := h.lim.WaitN(ctx, h.chunk); err != nil {
			return total, err
		}
		n, err := io.ReadFull(r, h.buf[:h.chunk])
		w.Write(h.buf[:n])
		total += int64(n)
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return total, nil
		case err != nil:
			return total, err
		}
	}
}

// readCounter tells a Read function of the bytes written through it.
type readCounter func(n int64)

func (c readCounter) Write(p []byte) (int, error) {
	c(int64(len(p)))
	return len(p), nil
}

// onlyReader hides a reader's WriterTo, so that io.CopyBuffer reads
// through the buffer it is given.
type onlyReader struct{ io.Reader }

// Scan runs Hash over the whole store now and then every period, within
// the rate, until ctx is done, and logs what it did: the server's
// background pass over files that arrived another way.
func (k *Keeper) Scan(ctx context.Context, period time.Duration, rate int64, log *slog.Logger) {
	if log == nil {
		log = k.log
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		start := time.Now()
		s, err := k.Hash(ctx, "", HashOptions{Rate: rate, Event: func(ev Event) {
			if ev.Err != nil {
				log.Warn("hashing a file", "name", ev.Name, "err", ev.Err)
			}
		}})
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("hashing the files without a digest", "err", err)
		case s.Hashed > 0 || s.Failed > 0:
			log.Info("hashed the files without a digest", "hashed", s.Hashed, "failed", s.Failed, "fresh", s.Fresh, "bytes", s.Bytes, "took", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

package expiry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"largo"
	"largo/gate"
)

// Downloads counts the downloads of file links that give only so many
// (gate.Link.MaxDownloads).
//
// A download is a file's worth of bytes: every byte of the file sent
// through the link, to anyone, counts, and each time the count reaches
// the file's size one download is used. So a download resumed after a
// cut (a second request with Range continuing the first) or made in
// segments (several Range requests at once, largo get -j 8, aria2c -x 4)
// counts once: its requests together send the file once. A cut costs
// the bytes the server sent before it, a little more than the client
// received (what the network still held), so that many cuts can use up a
// download between them. Nobody can take more than the limit's worth of
// bytes by splitting, sparing a byte, or spreading the requests over
// several addresses. (Counting a download when a response carrying the
// file's last byte ends would let anyone take every other byte for free;
// counting per client address would let several addresses share one
// download.) A file of zero bytes counts a download per response.
//
// A response is admitted when the downloads used, plus the bytes already
// sent toward the next one, plus what the responses in flight through
// the link on this instance were admitted to send, leave room: a crowd
// of parallel requests cannot start more downloads than remain. The
// count lives in the state area ("downloads/ID"), changed by
// compare-and-swap where the state offers it (largo.StateSwapper), so
// that every instance serving a bucket agrees; what is in flight is
// known to each instance only.
//
// A Downloads is safe for concurrent use.
type Downloads struct {
	state largo.State

	mu       sync.Mutex
	inflight map[string]int64 // link ID -> bytes admitted and not yet counted
}

// Count is a link's download count, as kept in the state area.
type Count struct {
	// Used is the downloads used.
	Used int64 `json:"used"`
	// Bytes is what was sent toward the next one.
	Bytes int64 `json:"bytes,omitempty"`
}

// Errors of Begin.
var (
	// ErrUsedUp: the link gave all its downloads.
	ErrUsedUp = errors.New("this share link's downloads are used up")
	// ErrInFlight: the downloads left are taken by those in progress.
	ErrInFlight = errors.New("downloads in progress take what is left of this share link's downloads: try again when they end")
)

const downloadPrefix = "downloads/"

// NewDownloads returns the counts kept in state.
func NewDownloads(state largo.State) *Downloads {
	return &Downloads{state: state, inflight: map[string]int64{}}
}

// Used returns the count of the link id.
func (d *Downloads) Used(ctx context.Context, id string) (Count, error) {
	c, _, err := d.read(ctx, id)
	return c, err
}

func (d *Downloads) read(ctx context.Context, id string) (Count, string, error) {
	var c Count
	var b []byte
	var version string
	var err error
	if sw, ok := d.state.(largo.StateSwapper); ok {
		b, version, err = sw.GetVersion(ctx, downloadPrefix+id)
	} else {
		b, err = d.state.Get(ctx, downloadPrefix+id)
	}
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return c, "", nil
	case err != nil:
		return c, "", err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, "", fmt.Errorf("download count of link %s: unreadable", id)
	}
	return c, version, nil
}

// Begin admits a response through the link l of a file of size bytes
// that asks for want of them (the length of its ranges; size for the
// whole file), or refuses it with ErrUsedUp or ErrInFlight. Call done
// once with the bytes of the file the response sent when it ends, and
// whether it sent the whole of what it was asked (which counts a
// download of a file of zero bytes).
func (d *Downloads) Begin(ctx context.Context, l *gate.Link, size, want int64) (done func(ctx context.Context, sent int64, complete bool) error, err error) {
	c, _, err := d.read(ctx, l.ID)
	if err != nil {
		return nil, err
	}
	if c.Used >= l.MaxDownloads {
		return nil, fmt.Errorf("%w (%d of %d)", ErrUsedUp, c.Used, l.MaxDownloads)
	}
	want = max(0, min(want, size))
	d.mu.Lock()
	if size > 0 && c.Used*size+c.Bytes+d.inflight[l.ID] >= l.MaxDownloads*size {
		d.mu.Unlock()
		return nil, ErrInFlight
	}
	d.inflight[l.ID] += want
	d.mu.Unlock()
	var once sync.Once
	return func(ctx context.Context, sent int64, complete bool) (err error) {
		once.Do(func() {
			d.mu.Lock()
			if d.inflight[l.ID] -= want; d.inflight[l.ID] <= 0 {
				delete(d.inflight, l.ID)
			}
			d.mu.Unlock()
			if sent > 0 && size > 0 || size == 0 && complete {
				err = d.add(ctx, l.ID, size, sent)
			}
		})
		return err
	}, nil
}

// add counts sent bytes of a file of size bytes through the link id.
func (d *Downloads) add(ctx context.Context, id string, size, sent int64) error {
	ctx = context.WithoutCancel(ctx)
	for range 32 {
		c, version, err := d.read(ctx, id)
		if err != nil {
			return err
		}
		if size == 0 {
			c.Used++
		} else {
			c.Bytes += sent
			c.Used += c.Bytes / size
			c.Bytes %= size
		}
		b, _ := json.Marshal(c)
		sw, ok := d.state.(largo.StateSwapper)
		switch {
		case !ok:
			return d.state.Put(ctx, downloadPrefix+id, b)
		case version == "":
			cr, ok := d.state.(largo.StateCreator)
			if !ok {
				return d.state.Put(ctx, downloadPrefix+id, b)
			}
			err = cr.Create(ctx, downloadPrefix+id, b)
			if errors.Is(err, largo.ErrExist) {
				continue
			}
			return err
		default:
			_, err = sw.Swap(ctx, downloadPrefix+id, b, version)
			if errors.Is(err, largo.ErrPrecondition) {
				continue
			}
			return err
		}
	}
	return fmt.Errorf("download count of link %s: too many changes at once", id)
}

// Forget drops the count of the link id (revoked).
func (d *Downloads) Forget(ctx context.Context, id string) error {
	return d.state.Delete(ctx, downloadPrefix+id)
}

package links

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"largo"
	"largo/record"
)

// A file link may give only so many downloads (Link.MaxDownloads).
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
// count lives in the state area ("downloads/ID"), changed only as it was
// read (record.Table.Update), so that every instance serving a bucket
// agrees; what is in flight is known to each instance only.

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

// Downloads returns the download count of the link id.
func (ls *Links) Downloads(ctx context.Context, id string) (Count, error) {
	if ls == nil {
		return Count{}, ErrOff
	}
	return ls.count(ctx, id)
}

// count reads the download count of the link id; no record is a count
// of zero.
func (ls *Links) count(ctx context.Context, id string) (Count, error) {
	c, err := ls.counts.Get(ctx, id)
	if errors.Is(err, largo.ErrNotFound) {
		return Count{}, nil
	}
	return c, err
}

// Begin admits a response through the link l of a file of size bytes
// that asks for want of them (the length of its ranges; size for the
// whole file), or refuses it with ErrUsedUp or ErrInFlight. Call done
// once with the bytes of the file the response sent when it ends, and
// whether it sent the whole of what it was asked (which counts a
// download of a file of zero bytes).
func (ls *Links) Begin(ctx context.Context, l *Link, size, want int64) (done func(ctx context.Context, sent int64, complete bool) error, err error) {
	if ls == nil {
		return nil, ErrOff
	}
	c, err := ls.count(ctx, l.ID)
	if err != nil {
		return nil, err
	}
	if c.Used >= l.MaxDownloads {
		return nil, fmt.Errorf("%w (%d of %d)", ErrUsedUp, c.Used, l.MaxDownloads)
	}
	want = max(0, min(want, size))
	ls.downMu.Lock()
	if size > 0 && c.Used*size+c.Bytes+ls.inflight[l.ID] >= l.MaxDownloads*size {
		ls.downMu.Unlock()
		return nil, ErrInFlight
	}
	ls.inflight[l.ID] += want
	ls.downMu.Unlock()
	var once sync.Once
	return func(ctx context.Context, sent int64, complete bool) (err error) {
		once.Do(func() {
			ls.downMu.Lock()
			if ls.inflight[l.ID] -= want; ls.inflight[l.ID] <= 0 {
				delete(ls.inflight, l.ID)
			}
			ls.downMu.Unlock()
			if sent > 0 && size > 0 || size == 0 && complete {
				err = ls.add(ctx, l.ID, size, sent)
			}
		})
		return err
	}, nil
}

// add counts sent bytes of a file of size bytes through the link id,
// only as the count was read (record.Table.Update), even when the
// response's client has left.
func (ls *Links) add(ctx context.Context, id string, size, sent int64) error {
	_, err := ls.counts.Update(context.WithoutCancel(ctx), id, func(c *Count, _ bool) (record.Change, error) {
		if size == 0 {
			c.Used++
		} else {
			c.Bytes += sent
			c.Used += c.Bytes / size
			c.Bytes %= size
		}
		return record.Write, nil
	})
	if err != nil {
		return fmt.Errorf("download count of link %s: %w", id, err)
	}
	return nil
}

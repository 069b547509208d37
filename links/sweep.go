package links

import (
	"context"
	"errors"

	"largo"
	"largo/record"
)

// Sweep removes the records of links that expired more than Config.Grace
// ago, then the download counts of links whose record is gone (swept,
// revoked, or removed by hand), and returns how many records it removed.
// A server calls it periodically; any instance serving the store may,
// and several at once do no harm. A link extended meanwhile stays: a
// record is removed only as it was read (record.Table.Sweep). A record
// that cannot be read, or whose key is no link's ID, is left alone.
func (ls *Links) Sweep(ctx context.Context) (int, error) {
	if ls == nil {
		return 0, nil
	}
	deadline := ls.cfg.Now().Add(-ls.cfg.Grace)
	n, err := ls.links.Sweep(ctx, func(_ context.Context, e record.Entry[Link]) bool {
		return validID(e.Key) && e.Value.ID == e.Key && e.Value.Expires.Before(deadline)
	})
	if err != nil {
		return n, err
	}
	var failed error
	m, err := ls.counts.Sweep(ctx, func(ctx context.Context, e record.Entry[Count]) bool {
		if !validID(e.Key) {
			return false
		}
		// Read, not taken from the cache: a link made by another
		// instance a moment ago keeps its count.
		_, err := ls.links.Recent(ctx, e.Key, 0)
		if err != nil && !errors.Is(err, largo.ErrNotFound) && failed == nil {
			failed = err
		}
		return errors.Is(err, largo.ErrNotFound)
	})
	if err == nil {
		err = failed
	}
	return n + m, err
}

package links

import (
	"context"
	"errors"
	"strings"

	"largo"
)

// stale is a record the sweep removes: its key, and the version it was
// read at ("" where the state area does not compare).
type stale struct{ key, version string }

// Sweep removes the records of links that expired more than Config.Grace
// ago, then the download counts of links whose record is gone (swept,
// revoked, or removed by hand), and returns how many records it removed.
// A server calls it periodically; any instance serving the store may,
// and several at once do no harm. A link extended meanwhile stays: where
// the state area compares (largo.StateSwapper), a record is removed only
// as it was read. A record of a link that cannot be read is left alone.
func (ls *Links) Sweep(ctx context.Context) (int, error) {
	if ls == nil {
		return 0, nil
	}
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	links, err := ls.expired(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range links {
		switch err := ls.remove(ctx, s); {
		case err == nil:
			n++
			ls.remember(strings.TrimPrefix(s.key, linkPrefix), nil)
		case !errors.Is(err, errKept):
			keep(err)
		}
	}
	counts, err := ls.orphans(ctx)
	if err != nil {
		keep(err)
		return n, first
	}
	for _, s := range counts {
		switch err := ls.remove(ctx, s); {
		case err == nil:
			n++
		case !errors.Is(err, errKept):
			keep(err)
		}
	}
	return n, first
}

// expired lists the records of links that expired more than Grace ago.
func (ls *Links) expired(ctx context.Context) ([]stale, error) {
	deadline := ls.cfg.Now().Add(-ls.cfg.Grace)
	return ls.collect(ctx, linkPrefix, func(id string) (string, bool, error) {
		b, version, err := ls.versioned(ctx, linkPrefix+id)
		switch {
		case errors.Is(err, largo.ErrNotFound):
			return "", false, nil
		case err != nil:
			return "", false, err
		}
		l, err := decode(id, b)
		return version, err == nil && l.Expires.Before(deadline), nil
	})
}

// orphans lists the download counts of links that have no record.
func (ls *Links) orphans(ctx context.Context) ([]stale, error) {
	return ls.collect(ctx, downloadPrefix, func(id string) (string, bool, error) {
		_, err := ls.cfg.State.Get(ctx, linkPrefix+id)
		switch {
		case errors.Is(err, largo.ErrNotFound):
			_, version, err := ls.versioned(ctx, downloadPrefix+id)
			return version, err == nil, nil
		case err != nil:
			return "", false, err
		}
		return "", false, nil
	})
}

// collect lists the records under prefix, named by a link's ID, that
// pick chooses, with the version pick read them at.
func (ls *Links) collect(ctx context.Context, prefix string, pick func(id string) (version string, ok bool, err error)) ([]stale, error) {
	var out []stale
	for rec, err := range ls.cfg.State.List(ctx, prefix) {
		if err != nil {
			return nil, err
		}
		id := strings.TrimPrefix(rec.Key, prefix)
		if !validID(id) {
			continue
		}
		version, ok, err := pick(id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, stale{rec.Key, version})
		}
	}
	return out, nil
}

// versioned reads the record key, with its version where the state area
// compares.
func (ls *Links) versioned(ctx context.Context, key string) ([]byte, string, error) {
	if sw, ok := ls.cfg.State.(largo.StateSwapper); ok {
		return sw.GetVersion(ctx, key)
	}
	b, err := ls.cfg.State.Get(ctx, key)
	return b, "", err
}

// remove removes s, if it is still as it was read: errKept if it
// changed meanwhile.
func (ls *Links) remove(ctx context.Context, s stale) error {
	sw, ok := ls.cfg.State.(largo.StateSwapper)
	if !ok || s.version == "" {
		return ls.cfg.State.Delete(ctx, s.key)
	}
	err := sw.DeleteIf(ctx, s.key, s.version)
	if errors.Is(err, largo.ErrPrecondition) {
		return errKept
	}
	return err
}

// errKept: a record the sweep would remove changed since it was read.
var errKept = errors.New("changed meanwhile")

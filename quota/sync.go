package quota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"largo"
	"largo/record"
)

// The usage every instance shares is one record of the state area,
// quota/usage.json, changed only as it was read (record.Table.Update).
const (
	usagePrefix = "quota/"
	usageKey    = "usage.json"
)

// usageRecord is the usage every instance shares.
type usageRecord struct {
	tally
	// Reconciled is when a reconcile pass last counted everything.
	Reconciled time.Time `json:"reconciled,omitzero"`
	// Walked is when that pass began to walk: the changes made before
	// are in its count.
	Walked time.Time `json:"walked,omitzero"`
	// Counted are the paths that pass counted.
	Counted []string `json:"counted,omitempty"`
}

// filled makes rec's counters ready to count into.
func (rec *usageRecord) filled() {
	if rec.Users == nil {
		rec.Users = map[string]Usage{}
	}
	if rec.Paths == nil {
		rec.Paths = map[string]Usage{}
	}
}

// read returns the usage record; a missing one is an empty record, found
// false.
func (k *Keeper) read(ctx context.Context) (rec usageRecord, found bool, err error) {
	rec, err = k.usage.Get(ctx, usageKey)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		rec, err = usageRecord{}, nil
	case err == nil:
		found = true
	}
	rec.filled()
	return rec, found, err
}

// update changes the usage record with change, only as it was read
// (record.Table.Update: read again and changed again when another
// instance wrote it meanwhile). It returns the record written, or read
// when change says there is nothing to write.
func (k *Keeper) update(ctx context.Context, change func(*usageRecord) bool) (usageRecord, error) {
	rec, err := k.usage.Update(ctx, usageKey, func(r *usageRecord, _ bool) (record.Change, error) {
		r.filled()
		if !change(r) {
			return record.Keep, nil
		}
		return record.Write, nil
	})
	if err != nil {
		return rec, fmt.Errorf("usage record: %w", err)
	}
	rec.filled()
	return rec, nil
}

// Load reads the usage recorded, and reports whether there is any (a
// store never counted needs a reconcile pass, which Run then begins
// with). A server loads before it takes writes, so that the first ones
// are admitted against what was counted before.
func (k *Keeper) Load(ctx context.Context) (bool, error) {
	rec, found, err := k.read(ctx)
	if err != nil {
		return false, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.adoptLocked(rec)
	k.loaded, k.found = true, found
	return found, nil
}

// adoptLocked makes rec the base the local changes add to. k.mu is held.
func (k *Keeper) adoptLocked(rec usageRecord) {
	k.base, k.reconciled = rec.tally, rec.Reconciled
	k.known = map[string]bool{}
	for _, p := range rec.Counted {
		k.known[p] = true
	}
}

// Reconciled returns when the usage was last reconciled, as last read;
// the zero time if never.
func (k *Keeper) Reconciled() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reconciled
}

// Sync adds this instance's changes to the usage record, and reads back
// what other instances added. Syncs take turns: one waits for the one
// before it, or for ctx.
func (k *Keeper) Sync(ctx context.Context) error {
	select {
	case k.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-k.turn }()
	k.mu.Lock()
	// What is being added counts until the record that holds it is
	// adopted.
	mine, log := k.pending, k.log
	k.syncing, k.pending, k.log = mine, newTally(), nil
	k.mu.Unlock()
	rec, err := k.update(ctx, func(r *usageRecord) bool {
		added := false
		for _, c := range log {
			if c.at.After(r.Walked) { // else the pass counted it
				r.merge(c.t)
				added = true
			}
		}
		return added
	})
	k.mu.Lock()
	defer k.mu.Unlock()
	k.syncing = newTally()
	if err != nil {
		k.pending.merge(mine) // kept for the next time
		k.log = append(log, k.log...)
		return err
	}
	k.adoptLocked(rec)
	return nil
}

// MinPassGap is the least time between the end of a reconcile pass and
// the start of one asked for by a change only a pass counts (a folder
// removed): such changes wait for one pass together. A pass that took
// long waits ten times its length, so that passes take at most a tenth
// of the time.
const MinPassGap = 30 * time.Second

// Run keeps the usage until ctx is done: it reads it unless Load did
// (and reconciles a store never counted), syncs it every sync period,
// and reconciles it every reconcile period (zero: never) and after a
// change only a pass counts (see MinPassGap). It does not sync at its
// end: Close does, once the writes it counts have stopped.
func (k *Keeper) Run(ctx context.Context, sync, reconcile time.Duration) {
	k.mu.Lock()
	loaded, found := k.loaded, k.found
	k.mu.Unlock()
	if !loaded {
		var err error
		if found, err = k.Load(ctx); err != nil {
			k.cfg.Logger.Warn("quota: reading the usage", "err", err)
		}
	}
	last, took := k.cfg.Now(), time.Duration(0)
	if !found {
		took = k.pass(ctx)
		last = k.cfg.Now()
	}
	t := time.NewTicker(sync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := k.Sync(ctx); err != nil && ctx.Err() == nil {
			k.cfg.Logger.Warn("quota: syncing the usage", "err", err)
		}
		since := k.cfg.Now().Sub(last)
		if k.wantsPass() && since >= max(MinPassGap, 10*took) || reconcile > 0 && since >= reconcile {
			took = k.pass(ctx)
			last = k.cfg.Now()
		}
	}
}

// Close adds this instance's last changes to the usage record: the sync
// of a server's stop, once every write it admitted has ended and Run has
// returned. ctx bounds it; what it could not add is lost to the record
// until the next reconcile pass, and the error says so. A Keeper that
// only reads (largo usage) need not be closed.
func (k *Keeper) Close(ctx context.Context) error {
	if err := k.Sync(ctx); err != nil {
		return fmt.Errorf("usage record: the last changes not added: %w", err)
	}
	return nil
}

// pass runs a reconcile pass, logs it, and returns how long it took.
func (k *Keeper) pass(ctx context.Context) time.Duration {
	start := k.cfg.Now()
	if _, err := k.Reconcile(ctx); err != nil {
		k.cfg.Logger.Warn("quota: reconciling the usage", "err", err)
	}
	took := k.cfg.Now().Sub(start)
	k.cfg.Logger.Info("quota: usage reconciled", "took", took.Round(time.Millisecond))
	return took
}

// wantsPass reports whether something changed that only a pass counts:
// a change marked dirty, or a path with a quota the last pass did not
// count (one a reload added).
func (k *Keeper) wantsPass() bool {
	paths := k.paths()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dirty {
		return true
	}
	for _, p := range paths {
		if !k.known[p] {
			return true
		}
	}
	return false
}

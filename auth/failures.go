package auth

import (
	"time"

	"largo/internal/lru"
)

// Failed secrets (passwords, tokens, share links' passwords) are counted
// by key in budgets of failBurst tries that come back at one per
// failEvery, in three tables: by client (its address, an IPv6 /64 as one:
// largo.ClientOf), by the user name a password was tried for, and by the
// share link whose password was tried. A try is refused when any budget
// it counts against is spent, so that a guesser with many addresses is
// still held to the user's or the link's pace.
//
// Each table is bounded, and forgets only its least recently used
// record when full: never everything at once, so that a flood of new
// addresses cannot wipe the record of a client, a user or a link that is
// still failing (every try touches its records). A record whose tries
// are all back holds nothing and is dropped when next looked at. The
// user and link tables take only names that exist (users with a
// password, links whose token verified), so no stranger can fill them.

// failTable is one table of budgets of failures, a bounded LRU
// (internal/lru). Its methods are not atomic: Access holds its lock
// around them.
type failTable struct {
	c *lru.Cache[string, failRecord]
}

// failRecord is the budget of one key: tries left as of at.
type failRecord struct {
	tries float64
	at    time.Time
}

func newFailTable(max int) failTable {
	return failTable{c: lru.New[string, failRecord](max)}
}

// Len returns the number of records held.
func (t *failTable) Len() int { return t.c.Len() }

// left returns the tries key has at now, and touches its record.
func (t *failTable) left(key string, now time.Time) float64 {
	rec, ok := t.c.Get(key)
	if !ok {
		return failBurst
	}
	tries := min(failBurst, rec.tries+float64(now.Sub(rec.at))/float64(failEvery))
	if tries >= failBurst {
		t.c.Remove(key) // all its tries are back: nothing to remember
		return failBurst
	}
	return tries
}

// set records that key has tries left at now, making its record (and
// forgetting the least recently used one when the table is full).
func (t *failTable) set(key string, tries float64, now time.Time) {
	if tries >= failBurst {
		t.c.Remove(key)
		return
	}
	t.c.Add(key, failRecord{tries: tries, at: now})
}

// take takes one try from key ahead of a check, and reports whether it
// had one.
func (t *failTable) take(key string, now time.Time) bool {
	tries := t.left(key, now)
	if tries < 1 {
		return false
	}
	t.set(key, tries-1, now)
	return true
}

// give gives back a try taken ahead of a check that succeeded.
func (t *failTable) give(key string, now time.Time) {
	t.set(key, min(failBurst, t.left(key, now)+1), now)
}

// fail counts a failure already made (one not charged ahead).
func (t *failTable) fail(key string, now time.Time) {
	t.set(key, max(0, t.left(key, now)-1), now)
}

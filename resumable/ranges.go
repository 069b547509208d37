package resumable

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"largo/wire"
)

// A placed partial takes its range of its group's file when it is
// created (concat.go), and the range is recorded in the state area under
// its group (rangeKey), so that every partial is checked against the
// file its group declares before anything of it is staged:
//
//   - its range must lie within the file (parsePlacement), and overlap
//     no other partial's of the group, but for the very same range (a
//     piece made anew, whose first creation's answer was lost): two
//     partials writing one byte would make the file neither sent (409);
//   - its file's length (concat-length) must be its group's (409);
//   - the group's first partial admits the whole file, as a write of
//     concat-length bytes: the size limit (413), the free space and the
//     quotas (507), since the group's staged file and its final take that
//     much; every later one its own bytes, which are admitted again as
//     they arrive (admission.go). A length no store could hold is refused
//     so before a sparse file of that length is made.
//
// Ranges are forgotten with their group (forgetGroup) or when they expire
// (expireRecords). Creations in one group take turns on this server; two
// servers creating overlapping partials of one group at the same moment
// may both pass, and their file is then refused at its final if its
// digest was given.

// errOverlap refuses a partial whose range overlaps another's.
var errOverlap = wire.Refuse(http.StatusConflict, "this partial upload's bytes overlap another partial upload's of the same file (concat-id): each byte of the file belongs to one partial")

// span is a range of a group's file that a partial took.
type span struct{ at, size, total int64 }

// rangePrefix is where the ranges of group g are in the state area.
func rangePrefix(g string) string { return groupPrefix(g) + "r" }

// rangeKey is the state key of the range s of group g: its numbers are in
// the key, so that listing the group's ranges reads no record.
func rangeKey(g string, s span) string {
	return fmt.Sprintf("%s%016x-%016x-%016x", rangePrefix(g), s.at, s.size, s.total)
}

// checkRange checks the range s of a new partial of group g against those
// the group's partials took, and reports whether it is the group's first.
// Without a state area, every partial is its group's first.
func (h *Handler) checkRange(ctx context.Context, g string, s span) (first bool, err error) {
	if h.state == nil {
		return true, nil
	}
	first = true
	for rec, err := range h.state.List(ctx, rangePrefix(g)) {
		if err != nil {
			return false, err
		}
		var o span
		if _, err := fmt.Sscanf(strings.TrimPrefix(rec.Key, rangePrefix(g)), "%016x-%016x-%016x", &o.at, &o.size, &o.total); err != nil {
			continue // not a range
		}
		first = false
		switch {
		case o.total != s.total:
			return false, errGroupLength
		case o == s:
		case s.at < o.at+o.size && o.at < s.at+s.size:
			return false, errOverlap
		}
	}
	return first, nil
}

// takeRange records the range s of a new partial of group g.
func (h *Handler) takeRange(ctx context.Context, g string, s span) error {
	if h.state == nil {
		return nil
	}
	return h.state.Put(ctx, rangeKey(g, s), nil)
}

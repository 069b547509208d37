package resumable

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strings"

	tusd "github.com/tus/tusd/v2/pkg/handler"
)

// A group's SHA-256 follows its contiguous prefix (concat.go): when a
// placed partial ends, it records itself in the state area under its
// group and offset (pieceKey), and the group's hasher, on this server,
// hashes the partials that continue the prefix, one after the other, as
// long as each next one is recorded, reading their bytes back from the
// staging. The state (the prefix's length, a chain over the IDs of the
// partials it covers, the hash's binary state) is kept as the group's
// hash state in the staging, so that it survives restarts and moves
// between servers sharing a bucket. A final that joins the whole group
// takes the state as far as it goes, if the partials it covers are the
// final's own, and hashes the rest. Two servers hashing one group at once
// both write valid states; the longer one may be overwritten by the
// shorter, which costs a final a longer read, never a wrong digest.

// pieceRecord is a placed partial that ended, under pieceKey.
type pieceRecord struct {
	ID   string `json:"id"`
	Size int64  `json:"size"`
	// Assembly is the ID of the assembly the partial was copied into
	// as it ended (on a bucket: s3assembly.go), "" for none.
	Assembly string `json:"assembly,omitempty"`
}

// groupPrefix is where a group's records are in the state area.
func groupPrefix(g string) string { return "tus-group/" + g + "/" }

// pieceKey is the state key of the partial of group g that begins at at.
func pieceKey(g string, at int64) string { return fmt.Sprintf("%s%016x", groupPrefix(g), at) }

// groupHash is the SHA-256 of the first n bytes of a group's file, which
// the partials whose IDs make chain hold.
type groupHash struct {
	n     int64
	chain [32]byte
	h     hash.Hash
}

// chainNext is the chain of IDs after one more.
func chainNext(chain [32]byte, id string) [32]byte {
	h := sha256.New()
	h.Write(chain[:])
	h.Write([]byte(id))
	var next [32]byte
	h.Sum(next[:0])
	return next
}

// loadGroupHash returns the hash state kept for group g, or that of its
// empty prefix.
func (h *Handler) loadGroupHash(ctx context.Context, g string) groupHash {
	gh := groupHash{h: sha256.New()}
	b := h.cfg.Staging.LoadHash(ctx, g)
	if len(b) < 8+32 {
		return gh
	}
	s := sha256.New()
	if s.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[40:]) != nil {
		return gh
	}
	gh.n, gh.h = int64(binary.BigEndian.Uint64(b)), s
	copy(gh.chain[:], b[8:40])
	return gh
}

// saveGroupHash keeps gh as group g's hash state.
func (h *Handler) saveGroupHash(ctx context.Context, g string, gh groupHash) {
	st, err := gh.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(gh.n))
	b = append(append(b, gh.chain[:]...), st...)
	if err := h.cfg.Staging.SaveHash(ctx, g, b); err != nil {
		h.log.Warn("saving a parallel upload's hash state", "group", g, "err", err)
	}
}

// pieceDone records a placed partial whose bytes are all in, after
// copying it into its group's assembly where the staging makes one, and
// starts its group's hasher.
func (h *Handler) pieceDone(ctx context.Context, info tusd.FileInfo, pl placement) {
	if h.state == nil {
		return // the final hashes the whole file
	}
	rec := pieceRecord{ID: info.ID, Size: info.Size}
	if as, ok := h.cfg.Staging.(assembling); ok {
		if t, err := parseTarget(info.MetaData); err == nil {
			p := part{ID: info.ID, Size: info.Size, Group: pl.Group, GroupAt: pl.At, Total: pl.Total}
			if rec.Assembly, err = as.placePiece(ctx, t.Name, p); err != nil {
				h.log.Warn("copying a partial upload into place", "id", info.ID, "err", err)
			}
		}
	}
	b, _ := json.Marshal(rec)
	if err := h.state.Put(ctx, pieceKey(pl.Group, pl.At), b); err != nil {
		h.log.Warn("recording a partial upload", "id", info.ID, "err", err)
		return
	}
	h.kick(pl.Group)
}

// pieceAssembled reports whether the partial p of group g, as its record
// says, was copied into the assembly asm as it ended.
func (h *Handler) pieceAssembled(ctx context.Context, p part, asm string) bool {
	b, err := h.state.Get(ctx, pieceKey(p.Group, p.GroupAt))
	if err != nil {
		return false
	}
	var rec pieceRecord
	return json.Unmarshal(b, &rec) == nil && rec.ID == p.ID && rec.Size == p.Size && rec.Assembly == asm
}

// kick makes group g's hasher run: started, or told to look again once
// its round ends.
func (h *Handler) kick(g string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hashCtx.Err() != nil {
		return // stopped (Run ended)
	}
	if _, running := h.hashing[g]; running {
		h.hashing[g] = true
		return
	}
	h.hashing[g] = false
	h.hashers.Add(1)
	go h.follow(g)
}

// follow runs group g's hasher until a round finds nothing new.
func (h *Handler) follow(g string) {
	defer h.hashers.Done()
	for {
		h.advance(h.hashCtx, g)
		h.mu.Lock()
		if !h.hashing[g] {
			delete(h.hashing, g)
			h.mu.Unlock()
			return
		}
		h.hashing[g] = false
		h.mu.Unlock()
	}
}

// stopHashers stops the groups' hashers and waits for them; none starts
// afterwards.
func (h *Handler) stopHashers() {
	h.mu.Lock()
	h.stopHashing()
	h.mu.Unlock()
	h.hashers.Wait()
}

// advance hashes the partials that continue group g's prefix, as long as
// the next one is recorded.
func (h *Handler) advance(ctx context.Context, g string) {
	unlock := h.hashLocks.Lock(g)
	defer unlock()
	gh := h.loadGroupHash(ctx, g)
	for {
		b, err := h.state.Get(ctx, pieceKey(g, gh.n))
		if err != nil {
			return
		}
		var rec pieceRecord
		if json.Unmarshal(b, &rec) != nil || rec.Size <= 0 || !validID(rec.ID) {
			return
		}
		p := part{ID: rec.ID, At: gh.n, Size: rec.Size, Group: g, GroupAt: gh.n}
		if err := h.hashPart(ctx, gh.h, p, 0); err != nil {
			h.log.Warn("hashing a parallel upload's bytes", "group", g, "id", rec.ID, "err", err)
			return // gh.h took part of the bytes: not saved
		}
		gh.n += rec.Size
		gh.chain = chainNext(gh.chain, rec.ID)
		h.saveGroupHash(ctx, g, gh)
	}
}

// hashPart adds the bytes of p from off on to sum.
func (h *Handler) hashPart(ctx context.Context, sum hash.Hash, p part, off int64) error {
	rc, err := h.cfg.Staging.ReadPart(ctx, p, off)
	if err != nil {
		return err
	}
	defer rc.Close()
	bp := teePool.Get().(*[]byte)
	defer teePool.Put(bp)
	n, err := io.CopyBuffer(sum, rc, *bp)
	if err == nil && n != p.Size-off {
		err = fmt.Errorf("partial upload %s: %d bytes read, not %d: %w", p.ID, n, p.Size-off, io.ErrUnexpectedEOF)
	}
	return err
}

// wholeSum returns the SHA-256 of the file parts make up, in order: from
// group g's state when they are the whole of that group and its prefix
// is theirs, or from the first partial's own state when it is a plain
// one, the rest read back.
func (h *Handler) wholeSum(ctx context.Context, parts []part, g string) (hash.Hash, error) {
	sum, from := sha256.New(), int64(0)
	switch {
	case g != "":
		unlock := h.hashLocks.Lock(g)
		defer unlock()
		gh := h.loadGroupHash(ctx, g)
		var chain [32]byte
		var at int64
		for _, p := range parts {
			if at >= gh.n {
				break
			}
			chain, at = chainNext(chain, p.ID), at+p.Size
		}
		if at == gh.n && chain == gh.chain {
			sum, from = gh.h, gh.n
		}
	case len(parts) > 0 && parts[0].Group == "":
		if s := h.store.loadHash(ctx, parts[0].ID, parts[0].Size); s != nil {
			sum, from = s, parts[0].Size
		}
	}
	for _, p := range parts {
		if p.At+p.Size <= from {
			continue
		}
		if err := h.hashPart(ctx, sum, p, from-p.At); err != nil {
			return nil, err
		}
		from = p.At + p.Size
	}
	return sum, nil
}

// forgetGroup removes what is kept of group g: its staged file, if still
// there, its hash state and its records.
func (h *Handler) forgetGroup(ctx context.Context, g string) {
	g = strings.TrimSuffix(g, "+") // as a bucket's staging lists it
	unlock := h.hashLocks.Lock(g)
	defer unlock()
	if err := h.cfg.Staging.Remove(ctx, g); err != nil {
		h.log.Warn("removing a parallel upload's state", "group", g, "err", err)
	}
	if h.state == nil {
		return
	}
	var keys []string
	for rec, err := range h.state.List(ctx, groupPrefix(g)) {
		if err != nil {
			break
		}
		keys = append(keys, rec.Key)
	}
	for _, k := range keys {
		h.state.Delete(ctx, k)
	}
}

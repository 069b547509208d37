package resumable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	tusd "github.com/tus/tusd/v2/pkg/handler"
	"golang.org/x/sync/errgroup"

	"largo"
	"largo/wire"
)

// Parallel uploads are tus concatenation: partial uploads (Upload-Concat:
// partial), sent at once over several connections, then a final upload
// (Upload-Concat: final;URL URL...) that lists them in order. tus gives a
// partial no place in the file: the final's list is the first the server
// learns of it. Two kinds of partial follow from that.
//
// A placed partial announces its place, in metadata keys of the client's
// namespace: concat-id (a name the client gives the whole file, 8 to 64
// letters, digits, '-' or '_'), concat-offset (where the partial's bytes
// begin in the file) and concat-length (the whole file's length). The
// partials of one concat-id and one owner form a group. On a folder, a
// group's partials write straight into one sparse staged file, each at its
// offset, so that the final upload only renames that file; on a bucket
// each is an upload of its own which, as it ends, the S3 server copies
// into one multipart upload at the file's own key (UploadPartCopy, as
// parts of one size, numbered from its offset: s3assembly.go), so that
// the final only completes that upload in place. largo's own
// clients (largo put -j, the page) send placed partials; any tus client
// can (tus-js-client through its onBeforeRequest hook).
//
// A plain partial announces nothing: it is staged like any upload, and the
// final joins the partials in the order it lists them: on a folder by the
// kernel (copy_file_range: a reflink where the filesystem shares blocks, a
// copy at the disk's speed where it does not, as on ext4), on a bucket by
// part copies. Either way no byte passes through largo, but, on a bucket,
// the parts that hold bytes of two partials (partials off the cut of the
// file into parts of one size: below S3's smallest part, within a file
// of at most smallJoin bytes, or of uneven sizes), and every part on a
// server that refuses UploadPartCopy.
//
// Every partial names its target like any upload (filename and folder,
// which tus-js-client sends with metadataForPartialUploads), so that it is
// admitted at its creation as an upload to that name would be: the
// access gate, the name, the size limit, the free space, the quotas. A
// placed partial is checked against the file its group declares
// (ranges.go): the group's first partial admits the whole file, every
// other one its own bytes; a plain one admits its own bytes; every
// partial's bytes are admitted again as they arrive (admission.go). The
// final is admitted for the whole file, and placed for its owner through
// the pipeline like every upload (hash.go, finished.go).
//
// The SHA-256 of the whole file is needed when the final upload ends, and
// a SHA-256 cannot be combined from the digests of its parts: it is a
// chain over the bytes in order. A group's digest follows its contiguous
// prefix (prefix.go): each placed partial that ends records itself, and
// the prefix's bytes are hashed, read back from the page cache or the
// bucket, as soon as the partials before them are in. A client that sends
// the file's pieces in order, N at once (largo put -j N sends many pieces
// of a few tens of MiB, the lowest first), leaves at most about N pieces to
// hash when its last byte arrives, whatever the file's size; N long
// partials sent side by side would leave all but the first. For plain
// partials the first partial's own hash state is carried on over the
// others' bytes when the final lists them.

// Metadata keys of the client's namespace that place a partial upload.
const (
	KeyConcatID     = "concat-id"
	KeyConcatOffset = "concat-offset"
	KeyConcatLength = "concat-length"
)

// Refusals of concatenation that are no store's.
var (
	errPartialName   = wire.Refuse(http.StatusBadRequest, "a partial upload needs the filename metadata of the file it is part of (tus-js-client: metadataForPartialUploads)")
	errPlacement     = wire.Refuse(http.StatusBadRequest, "a placed partial upload needs concat-id (8 to 64 letters, digits, - or _), concat-offset and concat-length (decimal byte counts), a known Upload-Length, and to lie within the file")
	errNotPartial    = wire.Refuse(http.StatusBadRequest, "concat-id, concat-offset and concat-length go only with Upload-Concat: partial")
	errGroupLength   = wire.Refuse(http.StatusConflict, "this concat-id names a file of another length: give the new file another concat-id")
	errHashedRange   = wire.Refuse(http.StatusConflict, "these bytes of the file are in and hashed already: the partial cannot replace them")
	errSmallParts    = wire.Refuse(http.StatusBadRequest, "on a bucket, every partial upload but the last must hold at least 5 MiB (S3's smallest part), or the whole file at most 64 MiB")
	errTooManyPart   = wire.Refuse(http.StatusBadRequest, "a final upload joins at most 10000 partial uploads")
	errPartialPlaced = wire.Refuse(http.StatusBadRequest, "a partial upload is stored only as part of a final upload (Upload-Concat: final) that lists it")
)

// placement is where a placed partial's bytes belong.
type placement struct {
	Group string // the group's key (groupKey), which is also its staging ID
	At    int64  // the partial's offset in the file
	Total int64  // the file's length
}

// groupKey is the staging ID of the group of owner's partials with the
// concat-id id: "g" and 32 hex digits. An upload's ID never begins with
// "g" (the stagings make them of hex digits, or "p" and hex digits), so a
// group is never mistaken for an upload.
func groupKey(owner, id string) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + id))
	return "g" + hex.EncodeToString(sum[:16])
}

// isGroup reports whether a staging ID is a group's.
func isGroup(id string) bool { return strings.HasPrefix(id, "g") }

// validConcatID reports whether v can be a concat-id.
func validConcatID(v string) bool {
	if len(v) < 8 || len(v) > 64 {
		return false
	}
	for _, c := range v {
		if !idChar(c) {
			return false
		}
	}
	return true
}

// parsePlacement reads the placement a new partial upload announces:
// placed is false when it announces none; an error when it announces one
// badly, or on an upload that is no partial.
func parsePlacement(info tusd.FileInfo) (pl placement, placed bool, err error) {
	meta := info.MetaData
	id, okID := meta[KeyConcatID]
	off, okOff := meta[KeyConcatOffset]
	total, okTotal := meta[KeyConcatLength]
	if !okID && !okOff && !okTotal {
		return pl, false, nil
	}
	if !info.IsPartial {
		return pl, false, errNotPartial
	}
	pl.At, err = strconv.ParseInt(off, 10, 64)
	if err == nil {
		pl.Total, err = strconv.ParseInt(total, 10, 64)
	}
	if err != nil || !validConcatID(id) || info.SizeIsDeferred || pl.At < 0 || pl.Total < 0 ||
		info.Size > pl.Total || pl.At > pl.Total-info.Size {
		return pl, false, errPlacement
	}
	pl.Group = groupKey(meta[keyOwner], id)
	return pl, true, nil
}

// placementOf returns the placement of a partial upload created with one,
// as its metadata (checked at its creation) records it.
func placementOf(info tusd.FileInfo) (placement, bool) {
	if !info.IsPartial || info.MetaData[keyOwner] == "" {
		return placement{}, false
	}
	pl, placed, err := parsePlacement(info)
	return pl, placed && err == nil
}

// admitPartial admits a new partial upload for its target: a plain one
// for its own bytes; a placed one within its group's file (ranges.go),
// for the whole file when it is its group's first and for its own bytes
// otherwise.
func (h *Handler) admitPartial(ctx context.Context, info tusd.FileInfo) error {
	t, err := parseTarget(info.MetaData)
	if errors.Is(err, errFilenameRequired) {
		return errPartialName
	}
	if err != nil {
		return err
	}
	pl, placed, err := parsePlacement(info)
	if err != nil {
		return err
	}
	t.Size = info.Size
	if !placed {
		return h.cfg.Writes.Check(ctx, t)
	}
	if g := h.loadGroupHash(ctx, pl.Group); g.n > pl.At {
		return errHashedRange
	}
	unlock := h.locks.Lock(pl.Group)
	defer unlock()
	s := span{at: pl.At, size: info.Size, total: pl.Total}
	first, err := h.checkRange(ctx, pl.Group, s)
	if err != nil {
		return err
	}
	if first {
		t.Size = pl.Total
	}
	if err := h.cfg.Writes.Check(ctx, t); err != nil {
		return err
	}
	return h.takeRange(ctx, pl.Group, s)
}

// admitFinal admits a final upload for the whole file. Its partials'
// holds on the quotas end: the final's admission counts all their bytes.
// A final that only renames its group's staged file needs no room of its
// own: a refusal for space alone does not hold it back.
func (h *Handler) admitFinal(ctx context.Context, info tusd.FileInfo) error {
	t, err := parseTarget(info.MetaData)
	if err != nil {
		return err
	}
	if len(info.PartialUploads) > maxParts {
		return errTooManyPart
	}
	h.release(info.PartialUploads...)
	t.Size = info.Size
	err = h.cfg.Writes.Check(ctx, t)
	if errors.Is(err, largo.ErrNoSpace) && h.cfg.Staging.JoinsInPlace() {
		if parts, perr := h.parts(ctx, info.PartialUploads); perr == nil && wholeGroup(parts) != "" {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	return h.ask(ctx, t, info.MetaData)
}

// maxParts is the most partials a final joins: S3's most parts.
const maxParts = 10000

// part is a partial upload as its final joins it.
type part struct {
	ID   string
	At   int64 // its offset in the final file
	Size int64
	// Group and GroupAt are its group and its offset there, for a placed
	// partial; Group is "" for a plain one.
	Group   string
	GroupAt int64
	Total   int64 // its group's file length
}

// parts returns the partial uploads ids, in order, as their final would
// join them.
func (h *Handler) parts(ctx context.Context, ids []string) ([]part, error) {
	parts := make([]part, len(ids))
	var at int64
	for i, id := range ids {
		up, err := h.store.GetUpload(ctx, id)
		if err != nil {
			return nil, err
		}
		info, err := up.GetInfo(ctx)
		if err != nil {
			return nil, err
		}
		if !info.IsPartial || info.SizeIsDeferred || info.Offset != info.Size {
			return nil, tusd.ErrUploadNotFinished
		}
		parts[i] = part{ID: info.ID, At: at, Size: info.Size}
		if pl, ok := placementOf(info); ok {
			parts[i].Group, parts[i].GroupAt, parts[i].Total = pl.Group, pl.At, pl.Total
		}
		at += info.Size
	}
	return parts, nil
}

// wholeGroup returns the group whose file parts make up, each at its own
// place and all of it, or "" when they do not.
func wholeGroup(parts []part) string {
	if len(parts) == 0 {
		return ""
	}
	g := parts[0].Group
	var at int64
	for _, p := range parts {
		if g == "" || p.Group != g || p.GroupAt != p.At || p.Total != parts[0].Total {
			return ""
		}
		at += p.Size
	}
	if at != parts[0].Total {
		return ""
	}
	return g
}

// concat joins the partials of a final upload into its staged bytes,
// with the SHA-256 of the whole, computed before the join, kept as the
// final's hash state (hash.go). It is tusd's ConcatUploads, called after
// the final's creation and before its finish (which places it).
func (h *Handler) concat(ctx context.Context, final tusd.FileInfo) error {
	ctx = context.WithoutCancel(ctx)
	parts, err := h.parts(ctx, final.PartialUploads)
	if err != nil {
		return h.storeErr("concat", err)
	}
	if err := h.cfg.Staging.Seal(ctx, parts); err != nil {
		return h.storeErr("concat", err)
	}
	g := wholeGroup(parts)
	sum, err := h.wholeSum(ctx, parts, g)
	if err != nil {
		return h.storeErr("concat", err)
	}
	// The hash state first: a join cut short leaves the final's bytes
	// incomplete (none of them, on a folder), which tells it apart from a
	// join that ended (joined).
	h.store.saveHash(ctx, final.ID, final.Size, sum)
	if ok, err := h.assemble(ctx, final, parts, g); ok || err != nil {
		if err != nil {
			h.store.saveHash(ctx, final.ID, 0, nil)
			return h.storeErr("concat", err)
		}
		return nil
	}
	if err := h.cfg.Staging.Join(ctx, final.ID, parts, g != ""); err != nil {
		h.store.saveHash(ctx, final.ID, 0, nil)
		if errors.Is(err, errSmallParts) {
			return h.tusErr("concat", err)
		}
		return h.storeErr("concat", err)
	}
	return nil
}

// assembling is a Staging that assembles a group's file where it belongs
// as its partials end (a bucket: s3assembly.go).
type assembling interface {
	placePiece(ctx context.Context, name string, p part) (string, error)
	assemble(ctx context.Context, final, name string, parts []part, copied func(p part, asm string) bool) (bool, error)
	Assembly(ctx context.Context, id string) string
}

// assemble makes the final upload's bytes its group's assembly where the
// staging makes them: parts, the whole of group g, for the final's own
// target. ok is false when the final is to be joined otherwise.
func (h *Handler) assemble(ctx context.Context, final tusd.FileInfo, parts []part, g string) (ok bool, err error) {
	as, can := h.cfg.Staging.(assembling)
	if !can || g == "" || h.state == nil {
		return false, nil
	}
	t, err := parseTarget(final.MetaData)
	if err != nil {
		return false, nil
	}
	return as.assemble(ctx, final.ID, t.Name, parts, func(p part, asm string) bool { return h.pieceAssembled(ctx, p, asm) })
}

// concatKey is the state key of the record of the final upload that
// joins the partials ids, so that a final request sent again (its answer
// was lost, or its server died) is answered with the same final upload
// rather than a second join of partials that may be gone.
func concatKey(ids []string) string {
	sum := sha256.Sum256([]byte(strings.Join(ids, " ")))
	return "tus-concat/" + hex.EncodeToString(sum[:16])
}

// concatRecord is the record under concatKey.
type concatRecord struct {
	Final string `json:"final"`
}

// finalIDs returns the partial upload IDs a final request lists, read as
// tusd reads them, or nil for a request that is no final creation.
func (h *Handler) finalIDs(r *http.Request) []string {
	v := r.Header.Get("Upload-Concat")
	if r.Method != http.MethodPost || !strings.HasPrefix(v, "final;") {
		return nil
	}
	var ids []string
	for f := range strings.FieldsSeq(strings.TrimPrefix(v, "final;")) {
		_, id, ok := strings.Cut(f, h.cfg.BasePath)
		if !ok {
			return nil
		}
		ids = append(ids, strings.Trim(id, "/"))
	}
	return ids
}

// answerFinal answers a final request whose partials an earlier final
// upload joined already: with that upload, placed now if a crash left it
// unplaced. It reports false when there is no such upload, for tusd to
// create one.
func (h *Handler) answerFinal(w http.ResponseWriter, r *http.Request, ids []string) bool {
	if h.state == nil {
		return false
	}
	ctx := context.WithoutCancel(r.Context())
	b, err := h.state.Get(ctx, concatKey(ids))
	if err != nil {
		return false
	}
	var rec concatRecord
	if json.Unmarshal(b, &rec) != nil || !validID(rec.Final) {
		return false
	}
	d, ok := h.loadDone(ctx, rec.Final)
	if !ok {
		if h.reach(ctx, rec.Final) != nil {
			return false // another's, or gone: tusd answers
		}
		unlock := h.locks.Lock(rec.Final)
		d, ok = h.loadDone(ctx, rec.Final)
		if !ok {
			info, complete := h.joined(ctx, rec.Final)
			if !complete {
				unlock()
				h.store.remove(ctx, rec.Final) // a join cut short: made again
				return false
			}
			if d, err = h.place(ctx, info, r.Header); err != nil {
				unlock()
				h.outside(w, r)
				writeTusError(w, h.tusErr("finish", err))
				return true
			}
		}
		unlock()
	}
	h.outside(w, r)
	hdr := w.Header()
	for k, v := range d.header() {
		hdr.Set(k, v)
	}
	hdr.Set("Location", h.cfg.BasePath+rec.Final)
	hdr.Set("Upload-Offset", strconv.FormatInt(d.Size, 10))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	return true
}

// joined returns a final upload's info, and whether its join ended: its
// bytes are all staged with the hash state of all of them.
func (h *Handler) joined(ctx context.Context, id string) (tusd.FileInfo, bool) {
	up, err := h.store.GetUpload(ctx, id)
	if err != nil {
		return tusd.FileInfo{}, false
	}
	info, err := up.GetInfo(ctx)
	if err != nil || !info.IsFinal || info.Offset != info.Size || h.store.finishedSum(ctx, id, info.Size) == nil {
		return info, false
	}
	// On a bucket, parts all copied may wait for their completion.
	return info, h.cfg.Staging.Seal(ctx, []part{{ID: id, Size: info.Size}}) == nil
}

// forgetParts removes the partials a final upload joined, and their
// groups, once the final is placed or refused: their bytes are in it, or
// of no use any more. Their bytes were counted as the final's. Several
// are removed at once: on a bucket each takes a few requests, and a file
// sent by largo put has tens of pieces.
func (h *Handler) forgetParts(ctx context.Context, final tusd.FileInfo) {
	var mu sync.Mutex
	groups := map[string]bool{}
	var eg errgroup.Group
	eg.SetLimit(8)
	for _, id := range final.PartialUploads {
		if !validID(id) || isGroup(id) {
			continue
		}
		eg.Go(func() error {
			if up, err := h.cfg.Staging.GetUpload(ctx, id); err == nil {
				if info, err := up.GetInfo(ctx); err == nil {
					if pl, ok := placementOf(info); ok {
						mu.Lock()
						groups[pl.Group] = true
						mu.Unlock()
					}
				}
			}
			h.store.remove(ctx, id)
			return nil
		})
	}
	eg.Wait()
	for g := range groups {
		h.forgetGroup(ctx, g)
	}
	// The record of the join stays until it expires: the final request
	// sent again is answered from it.
}

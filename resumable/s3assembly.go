package resumable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"largo/s3"
)

// On a bucket, the placed partials of a group are assembled where the
// file belongs as they end (concat.go): the first that ends (but the
// file's last) begins a multipart upload at the target's own key (an
// assembly, which the served store records and sweeps like its own
// multipart uploads) and sets the size of its parts from its own (a
// partial of largo's client is a whole number of them); each partial
// that lies on that cut copies itself in, server-side, as the parts its
// place in the file gives it (pieceParts). Every part but the last is of
// one size, as some servers require (Cloudflare R2). The final then
// checks that the parts are exactly the file's, places any that are
// missing (a partial off the cut, whose parts also hold bytes of its
// neighbours, passes them through largo; one whose copy failed, or that
// ended on a server that could not make it, is copied), and hands the
// assembly to the write pipeline, whose store completes it under the
// upload's condition: one CompleteMultipartUpload, whatever the file's
// size, and no copy of the whole into place. Where that cannot be (an
// assembly of another cut, a final that names another target, an
// assembly aborted meanwhile), the final joins the partials as before, by
// part copies into its own upload (Join).
//
// An assembly is recorded as ID.asm beside the group's objects (and,
// once a final takes it, beside the final's): its key, its upload ID,
// the file's name and its part size. Removing the group or the final
// aborts it, which is no error once it is completed.

// assembler is the served bucket's store (s3.Store): it begins
// assemblies, places their parts, and says whether the server applies
// conditional writes (Engine().Shared).
type assembler interface {
	BeginAssembly(ctx context.Context, name string) (key, id string, err error)
	PlacePart(ctx context.Context, key, id string, num int32, spans []s3.Span) (string, error)
	Engine() s3.Engine
}

// assembly is the record of an assembly, under ID.asm.
type assembly struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	ID   string `json:"id"`
	// PartSize is the size of every part but the last; zero in the
	// records of an earlier release, whose parts were cut otherwise.
	PartSize int64 `json:"part_size,omitempty"`
}

// pieceCut returns the part size a partial sets for its group's file,
// when it begins the group's assembly: its own size, or an equal share
// of it where it is larger than one copy may make. ok is false when p
// cannot set it: it ends the file (its size says nothing of the
// others'), it is smaller than S3's smallest part, its place is off its
// own cut, or the file would take more than S3's most parts.
func pieceCut(p part) (int64, bool) {
	if p.Size <= 0 || p.GroupAt < 0 || p.GroupAt+p.Size >= p.Total || p.GroupAt%p.Size != 0 {
		return 0, false
	}
	return equalCut(p.Size, p.Total)
}

// equalCut returns the part size of a file of total bytes made of
// pieces of size bytes (the last maybe fewer): size, or an equal share
// of it where it is larger than one copy may make. ok is false when
// size is below S3's smallest part or the file would take more than
// S3's most parts.
func equalCut(size, total int64) (int64, bool) {
	if size < minPart {
		return 0, false
	}
	cut := size
	for k := int64(2); cut > maxCopy; k++ {
		if k > size/minPart {
			return 0, false
		}
		if size%k == 0 {
			cut = size / k
		}
	}
	if (total+cut-1)/cut > maxParts {
		return 0, false
	}
	return cut, true
}

// pieceParts returns the numbers of p's parts (from first, n of them)
// in its group's file cut at size: ok is false when p is off the cut
// (its bytes share parts with its neighbours').
func pieceParts(p part, size int64) (first, n int32, ok bool) {
	switch {
	case size <= 0 || p.Size <= 0 || p.GroupAt < 0 || p.GroupAt+p.Size > p.Total || (p.Total+size-1)/size > maxParts:
		return 0, 0, false
	case p.GroupAt%size != 0 || p.Size%size != 0 && p.GroupAt+p.Size != p.Total:
		return 0, 0, false
	}
	return int32(p.GroupAt/size) + 1, int32((p.Size + size - 1) / size), true
}

// placePiece copies a placed partial that ended into its group's
// assembly, begun now if it is the first: name is the file's. It returns
// the assembly's ID, "" when the partial is left for the final to join.
func (s *s3Staging) placePiece(ctx context.Context, name string, p part) (string, error) {
	unlock := s.locks.Lock(p.Group)
	defer unlock()
	a, err := s.groupAssembly(ctx, p, name)
	if err != nil || a.Name != name || a.ID == "" {
		return "", err
	}
	first, n, ok := pieceParts(p, a.PartSize)
	if !ok {
		return "", nil
	}
	p.At = p.GroupAt
	spans := s.spans([]part{p}, a.PartSize)
	if err := s.placeParts(ctx, a, first, spans[first-1:first-1+n]); err != nil {
		return "", err
	}
	return a.ID, nil
}

// groupAssembly returns p's group's assembly, begun for the file name,
// cut at p's size, if the group has none and p may set the cut; the zero
// assembly otherwise.
func (s *s3Staging) groupAssembly(ctx context.Context, p part, name string) (assembly, error) {
	g := p.Group
	if a, err := s.loadAssembly(ctx, g); err == nil || !notFound(err) {
		return a, err
	}
	size, ok := pieceCut(p)
	if !ok {
		return assembly{}, nil
	}
	key, id, err := s.asm.BeginAssembly(ctx, name)
	if err != nil {
		return assembly{}, err
	}
	a := assembly{Name: name, Key: key, ID: id, PartSize: size}
	b, _ := json.Marshal(a)
	// Where another server's came first, its is the group's.
	if err := s.putRecord(ctx, s.key(g, ".asm"), b, true); err != nil {
		s.abortAssembly(ctx, a)
		if preconditionFailed(err) {
			return s.loadAssembly(ctx, g)
		}
		return assembly{}, err
	}
	return a, nil
}

// spans returns, for each part of the file that parts make up (each at
// its At) cut at size, the ranges of the partials' objects it is made
// of; the parts of the file that parts do not reach have none.
func (s *s3Staging) spans(parts []part, size int64) [][]s3.Span {
	var total int64
	for _, p := range parts {
		total = max(total, p.At+p.Size)
	}
	out := make([][]s3.Span, (total+size-1)/size)
	for _, p := range parts {
		key := *s.key(p.ID, "")
		for off := int64(0); off < p.Size; {
			pos := p.At + off
			k := pos / size
			n := min(p.Size-off, (k+1)*size-pos)
			out[k] = append(out[k], s3.Span{Key: key, Off: off, N: n})
			off += n
		}
	}
	return out
}

// placeParts places spans as the parts of the multipart upload of a
// (an assembly, or a final's own), from first on, a few at a time.
func (s *s3Staging) placeParts(ctx context.Context, a assembly, first int32, spans [][]s3.Span) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, sp := range spans {
		if len(sp) == 0 {
			continue
		}
		g.Go(func() error {
			_, err := s.asm.PlacePart(ctx, a.Key, a.ID, first+int32(i), sp)
			return err
		})
	}
	return g.Wait()
}

// assemble makes the final upload final's bytes the assembly of the group
// its parts make up whole, for the file name, if it can: the parts it
// holds are checked against the file's cut, those not placed yet
// (copied reports whether a partial was, into the assembly of an ID) are
// placed now, the final's own multipart upload is given up and the
// assembly recorded as the final's. ok is false, and nothing changed,
// when the final must be joined otherwise.
func (s *s3Staging) assemble(ctx context.Context, final, name string, parts []part, copied func(p part, asm string) bool) (ok bool, err error) {
	if len(parts) == 0 {
		return false, nil
	}
	g := parts[0].Group
	unlock := s.locks.Lock(g)
	defer unlock()
	a, err := s.loadAssembly(ctx, g)
	if notFound(err) {
		return false, nil
	}
	if err != nil || a.Name != name || a.PartSize <= 0 || (parts[0].Total+a.PartSize-1)/a.PartSize > maxParts {
		return false, err
	}
	held, err := s.heldParts(ctx, a)
	if notFound(err) {
		return false, nil // aborted meanwhile
	}
	if err != nil {
		return false, err
	}
	spans := s.spans(parts, a.PartSize)
	for num, size := range held {
		if num < 1 || int(num) > len(spans) || size != spansLen(spans[num-1]) {
			return false, nil // a part of another cut of the file
		}
	}
	// A part is placed again unless it is held whole and every partial
	// it holds bytes of was copied in (not still being copied).
	placed := make([]bool, len(spans))
	for i := range spans {
		placed[i] = held[int32(i+1)] == spansLen(spans[i])
	}
	for _, p := range parts {
		if !copied(p, a.ID) {
			for k := p.At / a.PartSize; k*a.PartSize < p.At+p.Size; k++ {
				placed[k] = false
			}
		}
	}
	for i := range spans {
		if placed[i] {
			spans[i] = nil
		}
	}
	if err := s.placeParts(ctx, a, 1, spans); err != nil {
		return false, err
	}
	if err := s.saveAssembly(ctx, final, a); err != nil {
		return false, err
	}
	// The final's own multipart upload holds nothing: given up, it reads
	// as an upload whose bytes are all in (tusd's S3 store).
	if obj, mp := objectID(final); mp != "" {
		_, err := s.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: aws.String(s.prefix + obj), UploadId: &mp})
		if err != nil && !notFound(err) {
			return false, err
		}
	}
	return true, nil
}

// spansLen is the length of the bytes of spans.
func spansLen(spans []s3.Span) int64 {
	var n int64
	for _, sp := range spans {
		n += sp.N
	}
	return n
}

// heldParts returns the sizes of the parts assembly a holds, by number.
func (s *s3Staging) heldParts(ctx context.Context, a assembly) (map[int32]int64, error) {
	held := map[int32]int64{}
	pages := awss3.NewListPartsPaginator(s.api, &awss3.ListPartsInput{Bucket: &s.bucket, Key: &a.Key, UploadId: &a.ID})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range page.Parts {
			held[aws.ToInt32(p.PartNumber)] = aws.ToInt64(p.Size)
		}
	}
	return held, nil
}

// Assembly returns the upload ID of the assembly that holds the finished
// upload id's bytes, or "".
func (s *s3Staging) Assembly(ctx context.Context, id string) string {
	a, err := s.loadAssembly(ctx, id)
	if err != nil {
		return ""
	}
	return a.ID
}

func (s *s3Staging) loadAssembly(ctx context.Context, id string) (assembly, error) {
	out, err := s.api.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.bucket, Key: s.key(id, ".asm")})
	if err != nil {
		return assembly{}, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 4<<10))
	if err != nil {
		return assembly{}, err
	}
	var a assembly
	if err := json.Unmarshal(b, &a); err != nil || a.Key == "" || a.ID == "" {
		return assembly{}, fmt.Errorf("assembly record of %s: %w", id, errors.Join(err, errBadRecord))
	}
	return a, nil
}

func (s *s3Staging) saveAssembly(ctx context.Context, id string, a assembly) error {
	b, _ := json.Marshal(a)
	return s.putRecord(ctx, s.key(id, ".asm"), b, false)
}

// dropAssembly aborts the assembly recorded for id, if any (no error once
// it is completed), before id's objects go.
func (s *s3Staging) dropAssembly(ctx context.Context, id string) error {
	a, err := s.loadAssembly(ctx, id)
	if err != nil {
		if notFound(err) || errors.Is(err, errBadRecord) {
			return nil
		}
		return err
	}
	return s.abortAssembly(ctx, a)
}

func (s *s3Staging) abortAssembly(ctx context.Context, a assembly) error {
	_, err := s.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &a.Key, UploadId: &a.ID})
	if err != nil && !notFound(err) {
		return err
	}
	return nil
}

// errBadRecord is a record that cannot be read.
var errBadRecord = errors.New("unreadable record")

// preconditionFailed reports whether err is S3's refusal of a condition.
func preconditionFailed(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed"
}

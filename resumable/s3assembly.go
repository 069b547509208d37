package resumable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// On a bucket, the placed partials of a group are assembled where the
// file belongs as they end (concat.go): the first that ends begins a
// multipart upload at the target's own key (an assembly, which the served
// store records and sweeps like its own multipart uploads), and each
// copies itself in, server-side, as the parts its place in the file
// gives it (partNumbers). The final then checks that the parts are
// exactly the file's, copies in any that are missing (a partial whose
// copy failed, or that ended on a server that could not make it), and
// hands the assembly to the write pipeline, whose store completes it
// under the upload's condition: one CompleteMultipartUpload, whatever the
// file's size, and no copy of the whole into place. Where that cannot be
// (partials below S3's smallest part, more than S3's parts, a final that
// names another target, an assembly aborted meanwhile), the final joins
// the partials as before, by part copies into its own upload.
//
// An assembly is recorded as ID.asm beside the group's objects (and,
// once a final takes it, beside the final's): its key, its upload ID and
// the file's name. Removing the group or the final aborts it, which is
// no error once it is completed.

// assembler begins assemblies: the served bucket's store (s3.Store).
type assembler interface {
	BeginAssembly(ctx context.Context, name string) (key, id string, err error)
}

// assembly is the record of an assembly, under ID.asm.
type assembly struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	ID   string `json:"id"`
}

// partNumbers returns the part numbers of p in its group's assembly: from
// its place in the file, so that every partial finds its own without
// asking the others, one part per maxCopy bytes. ok is false when p
// cannot be parts of an assembly: below S3's smallest part without
// ending the file, empty, outside the file, or its numbers past S3's
// last. The numbers are computed without overflow whatever the length.
func partNumbers(p part) (first, n int32, ok bool) {
	if p.Size <= 0 || p.Total <= 0 || p.GroupAt < 0 || p.GroupAt >= p.Total || p.Size > p.Total-p.GroupAt ||
		p.Size < minPart && p.GroupAt+p.Size != p.Total {
		return 0, 0, false
	}
	// GroupAt*maxParts/Total, below maxParts since GroupAt < Total.
	hi, lo := bits.Mul64(uint64(p.GroupAt), maxParts)
	q, _ := bits.Div64(hi, lo, uint64(p.Total))
	parts := (p.Size + maxCopy - 1) / maxCopy
	if int64(q)+parts > maxParts {
		return 0, 0, false
	}
	return int32(1 + q), int32(parts), true
}

// placePiece copies a placed partial that ended into its group's
// assembly, begun now if it is the first: name is the file's. It returns
// the assembly's ID, "" when the partial is left for the final to join.
func (s *s3Staging) placePiece(ctx context.Context, name string, p part) (string, error) {
	first, n, ok := partNumbers(p)
	if !ok || s.asm == nil {
		return "", nil
	}
	unlock := s.locks.Lock(p.Group)
	defer unlock()
	a, err := s.groupAssembly(ctx, p.Group, name)
	if err != nil || a.Name != name {
		return "", err
	}
	if err := s.copyIn(ctx, a, p, first, n); err != nil {
		return "", err
	}
	return a.ID, nil
}

// groupAssembly returns group g's assembly, begun for the file name if
// the group has none.
func (s *s3Staging) groupAssembly(ctx context.Context, g, name string) (assembly, error) {
	if a, err := s.loadAssembly(ctx, g); err == nil || !notFound(err) {
		return a, err
	}
	key, id, err := s.asm.BeginAssembly(ctx, name)
	if err != nil {
		return assembly{}, err
	}
	a := assembly{Name: name, Key: key, ID: id}
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

// copyIn copies p's bytes, server-side, into the assembly a as the n
// parts from first on.
func (s *s3Staging) copyIn(ctx context.Context, a assembly, p part, first, n int32) error {
	each := (p.Size + int64(n) - 1) / int64(n)
	for i := range n {
		off := int64(i) * each
		_, err := s.api.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket:          &s.bucket,
			Key:             &a.Key,
			UploadId:        &a.ID,
			PartNumber:      aws.Int32(first + i),
			CopySource:      aws.String(copySource(s.bucket, *s.key(p.ID, ""))),
			CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, min(off+each, p.Size)-1)),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// assemble makes the final upload final's bytes the assembly of the group
// its parts make up whole, for the file name, if it can: the parts it
// holds are checked against the file's (each partial's numbers and
// sizes), those of the partials not copied in yet (copied reports
// whether a partial was, into the assembly of an ID) are copied now, the
// final's own multipart upload is given up and the assembly recorded as
// the final's. ok is false, and nothing changed, when the final must be
// joined otherwise.
func (s *s3Staging) assemble(ctx context.Context, final, name string, parts []part, copied func(p part, asm string) bool) (ok bool, err error) {
	if s.asm == nil || len(parts) == 0 {
		return false, nil
	}
	g := parts[0].Group
	unlock := s.locks.Lock(g)
	defer unlock()
	a, err := s.loadAssembly(ctx, g)
	if notFound(err) {
		return false, nil
	}
	if err != nil || a.Name != name {
		return false, err
	}
	type want struct {
		p     part
		first int32
		n     int32
	}
	var wants []want
	sizes := map[int32]int64{} // of the parts the file needs
	next := int32(1)
	for _, p := range parts {
		first, n, ok := partNumbers(p)
		if !ok || first < next {
			return false, nil
		}
		each := (p.Size + int64(n) - 1) / int64(n)
		for i := range n {
			sizes[first+i] = min(each, p.Size-int64(i)*each)
		}
		wants = append(wants, want{p, first, n})
		next = first + n
	}
	held, err := s.heldParts(ctx, a)
	if notFound(err) {
		return false, nil // aborted meanwhile
	}
	if err != nil {
		return false, err
	}
	for num, size := range held {
		if sizes[num] != size {
			return false, nil // a part of another cut of the file
		}
	}
	for _, w := range wants {
		whole := copied(w.p, a.ID)
		for i := range w.n {
			whole = whole && held[w.first+i] == sizes[w.first+i]
		}
		if !whole {
			if err := s.copyIn(ctx, a, w.p, w.first, w.n); err != nil {
				return false, err
			}
		}
	}
	if err := s.saveAssembly(ctx, final, a); err != nil {
		return false, err
	}
	// The final's own multipart upload holds nothing: given up, it reads
	// as an upload whose bytes are all in (tusd's S3 store).
	if obj, mp := objectID(final); mp != "" {
		_, err := s.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: aws.String(s.prefix + obj), UploadId: &mp})
		if err != nil && !notFound(err) {
			return false, err
		}
	}
	return true, nil
}

// heldParts returns the sizes of the parts assembly a holds, by number.
func (s *s3Staging) heldParts(ctx context.Context, a assembly) (map[int32]int64, error) {
	held := map[int32]int64{}
	pages := s3.NewListPartsPaginator(s.api, &s3.ListPartsInput{Bucket: &s.bucket, Key: &a.Key, UploadId: &a.ID})
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
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: s.key(id, ".asm")})
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
	_, err := s.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &a.Key, UploadId: &a.ID})
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

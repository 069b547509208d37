package serve

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"

	"largo"
	"largo/auth"
	"largo/listing"
	"largo/wire"
)

// Digests (package digests) are kept with the version of the file they
// belong to, and answered from there: Repr-Digest on a file's GET, HEAD
// and 206 answers (and on a precompressed sidecar's, its own bytes'
// digest), the SHA256SUMS of a folder, and the JSON listing's "sha256".
// None is ever computed on a request's path: a file without a digest of
// its current version gets none.

// SumsName is the name of the virtual file that lists the digests of a
// folder's files, answered where no file of that name exists.
const SumsName = "SHA256SUMS"

// maxSumsDepth bounds the folders a SHA256SUMS goes down.
const maxSumsDepth = 32

// reprDigest sets the Repr-Digest of the file name at version etag when
// one is recorded and the client does not refuse sha-256
// (Want-Repr-Digest), and returns the writer to send the answer through:
// one that takes the field back from an answer that is not the
// representation (412, 416), on requests that may get one.
func (h *Handler) reprDigest(w http.ResponseWriter, r *http.Request, name, etag string) http.ResponseWriter {
	if want := r.Header["Want-Repr-Digest"]; len(want) > 0 && !wire.WantsSHA256(strings.Join(want, ",")) {
		return w
	}
	sum, err := h.digests.Lookup(r.Context(), name, etag)
	if err != nil {
		h.log.Warn("reading a file's digest", "path", r.URL.Path, "err", err)
	}
	if sum == nil {
		return w
	}
	w.Header()["Repr-Digest"] = []string{wire.FormatDigest(sum)}
	hdr := r.Header
	if hdr.Get("Range") == "" && hdr.Get("If-Match") == "" && hdr.Get("If-Unmodified-Since") == "" {
		return w // a 200, a 304 or a HEAD's
	}
	return &digestWriter{ResponseWriter: w}
}

// digestWriter drops the Repr-Digest of an error answer: a failed
// precondition or an unsatisfiable range sends no representation. It
// forwards ReadFrom and Unwrap, so that sendfile and the response
// controller still reach the writer below.
type digestWriter struct {
	http.ResponseWriter
}

func (w *digestWriter) WriteHeader(code int) {
	if code >= 400 {
		w.Header().Del("Repr-Digest")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *digestWriter) ReadFrom(src io.Reader) (int64, error) {
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(onlyWriter{w.ResponseWriter}, src)
}

func (w *digestWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// onlyWriter hides a writer's ReadFrom.
type onlyWriter struct{ io.Writer }

// listDigest returns the digest, in hexadecimal, of an entry of the
// folder dir, or "" when none is recorded for its version: for listings,
// which ask for many and so keep none of the answers (digests.Keeper.Peek).
func (h *Handler) listDigest(ctx context.Context, dir string, in *largo.Info) string {
	if in.IsDir || in.ETag == "" {
		return ""
	}
	sum, err := h.digests.Peek(ctx, largo.Join(dir, in.Name), in.ETag)
	if err != nil {
		h.log.Warn("reading a file's digest", "name", largo.Join(dir, in.Name), "err", err)
	}
	if sum == nil {
		return ""
	}
	return hex.EncodeToString(sum)
}

// serveSums answers FOLDER/SHA256SUMS where no such file exists: the
// digests recorded for the files below the folder that the requester may
// read, one line per file, in the format sha256sum -c reads (HEX, two
// spaces, the path below the folder; a path with a backslash or a line
// break escaped, its line starting with a backslash). A file without a
// digest of its current version is named on a comment line, which
// sha256sum -c skips. The walk goes through the gated store, depth first,
// each folder sorted by name within the listings' budget; folders reached
// through links, and deeper than maxSumsDepth, are left out (a comment
// says which). Nothing is read but the records. done is false when dir
// is no folder the requester may see: the name is then simply missing.
func (h *Handler) serveSums(w http.ResponseWriter, r *http.Request, dir string) (done bool, err error) {
	ctx := r.Context()
	if in, err := h.cfg.Store.Stat(ctx, dir); err != nil || !in.IsDir {
		return false, nil
	}
	if err := h.gate.Check(ctx, auth.List, dir, false); err != nil {
		return true, err
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("Cache-Control", "no-cache")
	hdr["Content-Security-Policy"] = sandbox
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return true, nil
	}
	s := &sums{h: h, ctx: ctx, out: bufio.NewWriterSize(w, 32<<10)}
	keep := func(d string) func(largo.Info) bool { return h.sidecarFilter(ctx, d) }
	sorted := h.listingFor(r).Sorted(h.cfg.Store, listing.ByName, keep)
	if err := largo.WalkDir(ctx, sorted, dir, s.visit(dir)); err != nil {
		if errors.Is(err, listing.ErrBusy) && s.out.Buffered() == 0 && s.lines == 0 {
			return true, busy(w, err)
		}
		return true, err
	}
	return true, s.out.Flush()
}

// sums is one SHA256SUMS being written.
type sums struct {
	h     *Handler
	ctx   context.Context
	out   *bufio.Writer
	line  []byte
	lines int
}

// visit returns the walk of the SHA256SUMS of the folder root, which
// writes the line of each file below it.
func (s *sums) visit(root string) largo.WalkDirFunc {
	return func(name string, in largo.Info, err error) error {
		rel := strings.TrimPrefix(name[len(root):], "/")
		switch {
		case err != nil && (name == root || errors.Is(err, listing.ErrBusy)):
			return err
		case err != nil:
			return s.comment("not listed: ", rel+"/") // a folder that may be seen but not listed
		case name == root, in.IsDir && in.Link:
			return nil // a linked folder is not entered: it could lead back up
		case in.IsDir && strings.Count(rel, "/")+1 >= maxSumsDepth:
			if err := s.comment("too deep, not listed: ", rel+"/"); err != nil {
				return err
			}
			return largo.SkipDir
		case in.IsDir, s.h.gate.Check(s.ctx, auth.Read, name, false) != nil:
			return nil // what may not be read is not listed
		}
		return s.file(largo.Parent(name), rel, &in)
	}
}

// file writes the line of one file.
func (s *sums) file(dir, name string, in *largo.Info) error {
	sum := s.h.listDigest(s.ctx, dir, in)
	if sum == "" {
		return s.comment("no digest recorded: ", name)
	}
	escaped := strings.ContainsAny(name, "\\\n\r")
	b := s.line[:0]
	if escaped {
		b = append(b, '\\')
	}
	b = append(b, sum...)
	b = append(b, ' ', ' ')
	b = appendSumsName(b, name, escaped)
	b = append(b, '\n')
	s.line = b
	s.lines++
	_, err := s.out.Write(b)
	return err
}

// comment writes a line that sha256sum -c skips.
func (s *sums) comment(why, name string) error {
	b := append(s.line[:0], "# "...)
	b = append(b, why...)
	b = appendSumsName(b, name, true)
	b = append(b, '\n')
	s.line = b
	_, err := s.out.Write(b)
	return err
}

// appendSumsName appends a path as sha256sum writes it: with escaped,
// a backslash, a line feed and a carriage return as \\, \n and \r.
func appendSumsName(b []byte, name string, escaped bool) []byte {
	if !escaped {
		return append(b, name...)
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, c)
		}
	}
	return b
}

// isSums reports whether a GET or HEAD of name that found nothing may be
// of a folder's SHA256SUMS.
func isSums(name string) bool {
	return name != "" && path.Base(name) == SumsName
}

package serve

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"largo"
	"largo/filecache"
	"largo/transfer"
)

// maxRanges bounds the ranges of one request. Beyond it the Range header is
// ignored and the whole file is sent, as RFC 9110 allows: thousands of tiny
// ranges cost far more than the file.
const maxRanges = 64

// get answers GET and HEAD for a file or a folder. The gate decides the
// open (read on a file; read or list on a folder) before the store is
// asked, so that a name the requester may not see answers the same
// whether or not it exists, and a folder is redirected to its slash only
// once it may be seen.
func (h *Handler) get(w http.ResponseWriter, r *http.Request, name string) error {
	f, err := h.reads.Open(r.Context(), name)
	if errors.Is(err, largo.ErrNotFound) && isSums(name) && !strings.HasSuffix(r.URL.Path, "/") {
		if done, err := h.serveSums(w, r, largo.Parent(name)); done {
			return err
		}
	}
	if h.cfg.Page != nil && (errors.Is(err, largo.ErrIsDir) || errors.Is(err, largo.ErrUnauthorized)) && r.URL.Query().Has("login") {
		// Signing in from a folder, or from one its visitor may not see
		// yet: the challenge, then back.
		return h.cfg.Page.Login(w, r)
	}
	if h.cfg.Page != nil && (errors.Is(err, largo.ErrIsDir) || errors.Is(err, largo.ErrUnauthorized) || errors.Is(err, largo.ErrPermission)) && r.URL.Query().Has("logout") {
		// Signing out, from a folder or from one the browser's credential
		// no longer opens.
		return h.cfg.Page.Logout(w, r)
	}
	if err != nil && h.uploadsOnly(r, name, err) {
		// A folder its visitor may put files in and not see.
		if !strings.HasSuffix(r.URL.Path, "/") {
			redirectSlash(w, r)
			return nil
		}
		return h.uploadPage(w, r, name, http.StatusOK, nil)
	}
	if errors.Is(err, largo.ErrIsDir) {
		if !strings.HasSuffix(r.URL.Path, "/") {
			redirectSlash(w, r)
			return nil
		}
		if format := r.URL.Query().Get("archive"); format != "" {
			return h.serveArchive(w, r, name, format)
		}
		return h.list(w, r, name)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if strings.HasSuffix(r.URL.Path, "/") {
		return errors.Join(largo.ErrNotFound, errors.New("file named as a folder"))
	}
	if done, err := h.redirect(w, r, name); done {
		return err
	}
	if v := viewOf(r); v != nil && v.Link.MaxDownloads > 0 {
		return h.countedDownload(w, r, name, f, v.Link)
	}
	return h.serveContent(w, r, name, f)
}

// serveContent sends an open file with http.ServeContent, which implements
// ranges, multipart/byteranges, If-Range and the conditional requests; it
// evaluates them against the ETag set here. The compression policy
// (compress.go) may send a precompressed sidecar or a compressed stream
// instead of the file's own bytes.
//
// ServeContent drops the error of a read that fails mid-body (a store
// connection lost, an object replaced since it was opened); it is kept
// here and returned, so that the response is cut rather than ended as if
// complete. Files of the operating system go through bare, for sendfile.
func (h *Handler) serveContent(w http.ResponseWriter, r *http.Request, name string, f largo.File) error {
	in := f.Info()
	hdr := w.Header()
	kept, _ := f.(*filecache.File)
	var kh *keptHead
	var ct string
	if kept != nil {
		kh = h.keptHeadOf(r, name, kept)
		ct = kh.contentType[0]
		hdr["Content-Type"] = kh.contentType
	} else {
		if ct = contentType(in); ct == "" {
			var err error
			if ct, err = sniff(f); err != nil {
				return err
			}
		}
		hdr.Set("Content-Type", ct)
	}
	// User content never runs script on largo's origin.
	hdr["Content-Security-Policy"] = sandbox
	if rg := r.Header.Get("Range"); rg != "" && (!strings.HasPrefix(rg, "bytes=") || strings.Count(rg, ",") >= maxRanges) {
		// RFC 9110 14.2: a range unit the server does not know is ignored.
		r.Header.Del("Range")
	} else if rg != "" {
		r.Header.Set("Range", answerableRanges(rg))
	}
	if done, err := h.serveEncoded(w, r, name, in, ct, f); done || err != nil {
		return err
	}
	if kept != nil && plain(r) {
		h.sendKept(w, r, name, kept, kh)
		return nil
	}
	if in.ETag != "" {
		hdr.Set("ETag", in.ETag)
		w = h.reprDigest(w, r, name, in.ETag)
	}
	return serveBody(w, r, in.Name, in.ModTime, f)
}

// serveBody runs http.ServeContent over f: over its operating-system file
// when it has one, which sendfile recognises, and otherwise through a
// reader that keeps the first read error (and, for a file held in slices,
// offers each to sendfile: sliced).
func serveBody(w http.ResponseWriter, r *http.Request, name string, mod time.Time, f largo.File) error {
	if of, ok := f.(largo.OSFile); ok {
		http.ServeContent(w, r, name, mod, &sized{File: of.OSFile(), size: f.Info().Size, atStart: true})
		return nil
	}
	content := &transfer.ReadErr{ReadSeeker: f}
	if sf, ok := f.(largo.SliceFile); ok {
		http.ServeContent(w, r, name, mod, &sliced{ReadErr: content, f: sf})
		return content.Err
	}
	http.ServeContent(w, r, name, mod, content)
	return content.Err
}

// sliced is a file held in slices (largo.SliceFile) as the transfer layer
// sends it: a syscall.Conn, the descriptor of the slice at the offset,
// which sendfile sends to the slice's end, and the transfer goes on from
// the next (see package transfer). A slice that cannot be had makes
// sendfile decline, and the bytes are read instead, where ReadErr keeps
// what failed.
type sliced struct {
	*transfer.ReadErr
	f largo.SliceFile
}

func (s *sliced) SyscallConn() (syscall.RawConn, error) {
	of, err := s.f.Slice()
	if err != nil {
		return nil, err
	}
	return of.SyscallConn()
}

// sized is an operating-system file at its start whose size is known (from
// the Stat of its opening): http.ServeContent learns a file's size by
// seeking to its end and back, two system calls per request that sized
// answers from memory. Any other seek, and any read, goes to the file;
// sendfile still finds the file (it needs only syscall.Conn, which the
// embedded *os.File provides) at the offset the last real seek or read
// left. The file must be at offset 0 when sized is made; a real seek back
// to 0 (after sniffing its type) makes it so again.
type sized struct {
	*os.File
	size    int64
	atStart bool // the file's offset is 0 and nothing moved it
	atEnd   bool // Seek(0, io.SeekEnd) was answered without moving it
}

func (f *sized) Seek(offset int64, whence int) (int64, error) {
	switch {
	case offset == 0 && whence == io.SeekEnd && f.atStart:
		f.atEnd = true
		return f.size, nil
	case offset == 0 && whence == io.SeekStart && f.atStart:
		f.atEnd = false
		return 0, nil
	}
	pos, err := f.File.Seek(offset, whence)
	f.atStart, f.atEnd = err == nil && pos == 0, false
	return pos, err
}

func (f *sized) Read(p []byte) (int, error) {
	if f.atEnd {
		return 0, io.EOF // where the answered seek to the end would be
	}
	f.atStart = false
	return f.File.Read(p)
}

// sniff derives a media type from the first bytes of f, as
// http.ServeContent would, and rewinds f.
func sniff(f largo.File) (string, error) {
	var buf [512]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return http.DetectContentType(buf[:n]), nil
}

// redirectSlash sends a folder named without its trailing slash to its
// canonical URL, so relative links in the listing resolve: through a
// share link, the folder's URL within the link (r.URL names the folder
// the link reaches, the request's own target names the link).
func redirectSlash(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if viewOf(r) != nil {
		if own, err := url.ParseRequestURI(r.RequestURI); err == nil {
			p = own.Path
		}
	}
	u := url.URL{Path: p + "/", RawQuery: r.URL.RawQuery}
	http.Redirect(w, r, u.EscapedPath()+querySuffix(u.RawQuery), http.StatusMovedPermanently)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func querySuffix(q string) string {
	if q == "" {
		return ""
	}
	return "?" + q
}

// unsatisfiable is a byte range no file reaches: http.ServeContent answers
// it 416 with Content-Range: bytes */SIZE.
const unsatisfiable = "bytes=9223372036854775807-"

// answerableRanges returns a bytes Range header as http.ServeContent
// should read it. It removes the suffix ranges of length zero ("-0"),
// which RFC 9110 14.1.1 calls unsatisfiable and http.ServeContent would
// answer as a 206 with an empty, inverted Content-Range (bytes 3-2/3). When nothing else is asked, it returns a
// range that is answered 416, as the request deserves. A suffix length or
// a last position of more digits than an int64 holds, which
// http.ServeContent refuses as invalid, is read as what it says: the
// whole file, or up to its end (RFC 9110 14.1.2: a suffix longer than
// the representation selects all of it; a last position past its end,
// up to its end); a first position of as many, as past the end.
func answerableRanges(rg string) string {
	specs := strings.Split(strings.TrimPrefix(rg, "bytes="), ",")
	kept := specs[:0]
	changed := false
	for _, sp := range specs {
		sp = strings.TrimSpace(sp)
		if n, ok := strings.CutPrefix(sp, "-"); ok && n != "" && strings.Trim(n, "0") == "" {
			changed = true
			continue
		}
		if first, last, ok := strings.Cut(sp, "-"); ok && (overflows(first) || overflows(last)) {
			changed = true
			switch {
			case overflows(first): // past any end: unsatisfiable
				sp = strconv.FormatInt(math.MaxInt64, 10) + "-"
			case first == "":
				sp = "-" + strconv.FormatInt(math.MaxInt64, 10)
			default:
				sp = first + "-"
			}
		}
		kept = append(kept, sp)
	}
	switch {
	case !changed:
		return rg
	case len(kept) == 0:
		return unsatisfiable
	}
	return "bytes=" + strings.Join(kept, ",")
}

// overflows reports whether n is a number of digits that an int64 cannot
// hold.
func overflows(n string) bool {
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return false
	}
	_, err := strconv.ParseInt(n, 10, 64)
	return err != nil
}

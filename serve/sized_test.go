package serve

import (
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSizedLikeFile: http.ServeContent answers the same over sized as over
// the bare file, for whole files, single, open-ended, suffix, multiple and
// unsatisfiable ranges, HEAD and an empty file.
func TestSizedLikeFile(t *testing.T) {
	dir := t.TempDir()
	body := make([]byte, 100000)
	for i := range body {
		body[i] = byte(i * 31)
	}
	for _, size := range []int{0, len(body)} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, body[:size], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ method, rng string }{
			{"GET", ""}, {"HEAD", ""}, {"GET", "bytes=0-0"}, {"GET", "bytes=10-99"},
			{"GET", "bytes=99000-"}, {"GET", "bytes=-500"}, {"GET", "bytes=0-9,50-59,99990-"},
			{"GET", "bytes=200000-"},
		} {
			for _, typed := range []bool{true, false} { // with a type, or sniffed
				serve := func(wrap bool) *httptest.ResponseRecorder {
					f, err := os.Open(p)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					req := httptest.NewRequest(tt.method, "/f", nil)
					if tt.rng != "" {
						req.Header.Set("Range", tt.rng)
					}
					rec := httptest.NewRecorder()
					if typed {
						rec.Header().Set("Content-Type", "application/octet-stream")
					}
					if wrap {
						http.ServeContent(rec, req, "f", time.Unix(1, 0), &sized{File: f, size: int64(size), atStart: true})
					} else {
						http.ServeContent(rec, req, "f", time.Unix(1, 0), f)
					}
					return rec
				}
				want, got := serve(false), serve(true)
				if got.Code != want.Code || unbound(got) != unbound(want) ||
					got.Header().Get("Content-Length") != want.Header().Get("Content-Length") ||
					got.Header().Get("Content-Range") != want.Header().Get("Content-Range") {
					t.Errorf("%d bytes, typed %v, %s %q: sized answered %d (%s, %d body bytes), the file %d (%s, %d)", size, typed, tt.method, tt.rng,
						got.Code, got.Header().Get("Content-Range"), got.Body.Len(), want.Code, want.Header().Get("Content-Range"), want.Body.Len())
				}
			}
		}
	}
}

// unbound is the body with its multipart boundary, random per response,
// taken out.
func unbound(rec *httptest.ResponseRecorder) string {
	_, params, _ := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if b := params["boundary"]; b != "" {
		return strings.ReplaceAll(rec.Body.String(), b, "BOUNDARY")
	}
	return rec.Body.String()
}

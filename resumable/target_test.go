package resumable

import (
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/serve"
	"largo/wire"
)

// oddNames are uploads named by a folder and a filename, as tus metadata
// names them, and the file each must write, or the error it must be
// refused with, whichever protocol names it.
var oddNames = []struct {
	folder, filename string
	want             string // the file written, if no error
	err              error
}{
	{"", "a.txt", "a.txt", nil},
	{"docs", "a.txt", "docs/a.txt", nil},
	{"/docs/", "a.txt", "docs/a.txt", nil},
	{"docs/deep", "日本語.txt", "docs/deep/日本語.txt", nil},
	{"", "a..b", "a..b", nil},
	{"", "x .y", "x .y", nil},
	// Slashes in a filename name folders.
	{"docs", "sub/a.txt", "docs/sub/a.txt", nil},
	{"", "/abs", "", largo.ErrInvalidName},
	{"", "a//b", "", largo.ErrInvalidName},
	{"docs", "a\\b", "", largo.ErrInvalidName},
	// Dot elements, in the filename or the folder.
	{"", ".", "", largo.ErrInvalidName},
	{"", "..", "", largo.ErrInvalidName},
	{"", "../x", "", largo.ErrInvalidName},
	{"docs", "../../etc/passwd", "", largo.ErrInvalidName},
	{"..", "x", "", largo.ErrInvalidName},
	{"docs/./a", "x", "", largo.ErrInvalidName},
	// Hidden and reserved names.
	{"", "...", "", largo.ErrReservedName},
	{"", ".env", "", largo.ErrReservedName},
	{"docs", ".git/config", "", largo.ErrReservedName},
	{".largo", "tus", "", largo.ErrReservedName},
	{"", "_largo/x", "", largo.ErrReservedName},
	{"_largo", "x", "", largo.ErrReservedName},
	// Bytes a name may not hold, and names that pass for others.
	{"", "bell\x07", "", largo.ErrInvalidName},
	{"", "\xff.txt", "", largo.ErrInvalidName},
	{"docs", "caf\xe9", "", largo.ErrInvalidName},
	{"", "a\u202etxt.exe", "", largo.ErrUnsafeName},
	{"", "trailing.", "", largo.ErrUnsafeName},
	{"", strings.Repeat("x", 256), "", largo.ErrInvalidName},
}

// metadataHeader encodes meta as an Upload-Metadata field.
func metadataHeader(meta map[string]string) string {
	var pairs []string
	for k, v := range meta {
		pairs = append(pairs, k+" "+base64.StdEncoding.EncodeToString([]byte(v)))
	}
	return strings.Join(pairs, ",")
}

// TestTargetsAgree: every way an upload names its file gives the same
// file, or the same refusal: tus metadata (parseTarget, which places the
// uploads of both protocols, and Handler.Target), an IETF POST by
// Upload-Metadata or by Content-Disposition (IETF.Target), with the folder
// in the metadata or in the URL, and an IETF PUT to the URL that names it.
func TestTargetsAgree(t *testing.T) {
	x := &IETF{}
	for _, tt := range oddNames {
		meta := map[string]string{KeyFilename: tt.filename}
		if tt.folder != "" {
			meta[KeyFolder] = tt.folder
		}
		ways := map[string]func() (string, error){
			"tus metadata": func() (string, error) {
				tg, err := parseTarget(meta)
				return tg.Name, err
			},
			"tus request": func() (string, error) {
				return (&Handler{}).Target(http.Header{"Upload-Metadata": {metadataHeader(meta)}})
			},
			"IETF POST, metadata": func() (string, error) {
				r := httptest.NewRequest(http.MethodPost, "/", nil)
				r.Header.Set("Upload-Metadata", metadataHeader(meta))
				return x.Target(r, "")
			},
			"IETF POST, Content-Disposition": func() (string, error) {
				// Its filename holds the whole relative name, as a
				// browser's would.
				cd := mime.FormatMediaType("inline", map[string]string{"filename": metadataName(meta)})
				if cd == "" {
					return "", errUnsendable
				}
				r := httptest.NewRequest(http.MethodPost, "/", nil)
				r.Header.Set("Content-Disposition", cd)
				return x.Target(r, "")
			},
			"IETF POST to the folder": func() (string, error) {
				// The folder in the URL (read by the server before the
				// protocol), the filename in the metadata.
				dir, err := largo.ParseName("/" + strings.Trim(tt.folder, "/"))
				if err != nil {
					return "", err
				}
				r := httptest.NewRequest(http.MethodPost, "/", nil)
				r.Header.Set("Upload-Metadata", metadataHeader(map[string]string{KeyFilename: tt.filename}))
				return x.Target(r, dir)
			},
			"IETF PUT": func() (string, error) {
				// The URL's path, read by the server before the protocol.
				name, err := largo.ParseName("/" + metadataName(meta))
				if err != nil {
					return "", err
				}
				return x.Target(httptest.NewRequest(http.MethodPut, "/", nil), name)
			},
		}
		for way, target := range ways {
			got, err := target()
			if errors.Is(err, errUnsendable) && tt.err != nil {
				continue // a name no Content-Disposition can carry
			}
			switch {
			case tt.err == nil && (err != nil || got != tt.want):
				t.Errorf("%s: folder %q, filename %q: %q, %v; want %q", way, tt.folder, tt.filename, got, err, tt.want)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("%s: folder %q, filename %q: %q, %v; want %v", way, tt.folder, tt.filename, got, err, tt.err)
			case tt.err != nil:
				if code, _ := wire.Status(err); code >= 500 {
					t.Errorf("%s: folder %q, filename %q: %v is a %d", way, tt.folder, tt.filename, err, code)
				}
			}
		}
	}
}

// errUnsendable stands for a name no Content-Disposition field can carry.
var errUnsendable = errors.New("no Content-Disposition carries this name")

// TestTargetWithoutName: an upload that names no file is refused by both
// protocols, each in its own words, as a bad request.
func TestTargetWithoutName(t *testing.T) {
	for _, meta := range []tusd.MetaData{{}, {KeyFolder: "docs"}, {KeyFilename: ""}} {
		_, err := parseTarget(meta)
		if !errors.Is(err, errFilenameRequired) {
			t.Errorf("tus, %v: %v; want %v", meta, err, errFilenameRequired)
		}
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Upload-Metadata", metadataHeader(meta))
		if _, err := (&IETF{}).Target(r, "docs"); !errors.Is(err, errNoFilename) {
			t.Errorf("IETF, %v: %v; want %v", meta, err, errNoFilename)
		}
	}
	for _, err := range []error{errFilenameRequired, errNoFilename} {
		if code, _ := wire.Status(err); code != http.StatusBadRequest {
			t.Errorf("%v: %d; want 400", err, code)
		}
	}
	// A PUT names its file by its URL: the root is no file.
	if _, err := (&IETF{}).Target(httptest.NewRequest(http.MethodPut, "/", nil), ""); !errors.Is(err, largo.ErrIsDir) {
		t.Errorf("IETF PUT to the root: %v; want ErrIsDir", err)
	}
}

// TestTargetsAgreeOverHTTP sends the uploads of oddNames whole, through
// the server: by tus (a creation, then its bytes), by an IETF POST to the
// folder naming the file in its metadata, and by an IETF PUT to the file's
// URL. Each stores "hi" at the same file, or each is refused with the
// status of the same refusal and stores nothing; but a URL whose own path
// is reserved (under /_largo, or hidden) may be answered as no resource
// (404) by the server before the protocol sees it.
func TestTargetsAgreeOverHTTP(t *testing.T) {
	type way func(f *ietfFixture, folder, filename string) (code int, where, urlPath string)
	ways := map[string]way{
		"tus": func(f *ietfFixture, folder, filename string) (int, string, string) {
			meta := map[string]string{KeyFilename: filename, KeyFolder: folder}
			ex := f.do(t, "POST", serve.ResumablePrefix, nil, "Tus-Resumable", "1.0.0", "Upload-Length", "2", "Upload-Metadata", metadataHeader(meta))
			if status(t, ex) != http.StatusCreated {
				return status(t, ex), "", ""
			}
			loc := ex.resp.Header.Get("Location")
			ex = f.do(t, "PATCH", loc, strings.NewReader("hi"), "Tus-Resumable", "1.0.0", "Upload-Offset", "0", "Content-Type", "application/offset+octet-stream")
			return status(t, ex), "", ""
		},
		"IETF POST": func(f *ietfFixture, folder, filename string) (int, string, string) {
			dir := strings.Trim(folder, "/")
			path := "/"
			if dir != "" {
				path = (&url.URL{Path: "/" + dir + "/"}).EscapedPath()
			}
			meta := map[string]string{KeyFilename: filename}
			ex := f.do(t, "POST", path, strings.NewReader("hi"), with(v(9), "Upload-Complete", "?1", "Upload-Metadata", metadataHeader(meta))...)
			return status(t, ex), ex.resp.Header.Get("Location"), dir
		},
		"IETF PUT": func(f *ietfFixture, folder, filename string) (int, string, string) {
			name := largo.Join(strings.Trim(folder, "/"), filename)
			ex := f.do(t, "PUT", (&url.URL{Path: "/" + name}).EscapedPath(), strings.NewReader("hi"), with(v(9), "Upload-Complete", "?1")...)
			return status(t, ex), ex.resp.Header.Get("Location"), name
		},
	}
	for name, send := range ways {
		t.Run(strings.ReplaceAll(name, " ", ""), func(t *testing.T) {
			f := newIETF(t, nil)
			for _, tt := range oddNames {
				code, where, urlPath := send(f, tt.folder, tt.filename)
				switch {
				case tt.err == nil && (code != http.StatusCreated && code != http.StatusNoContent || f.read(tt.want) != "hi"):
					t.Errorf("folder %q, filename %q: %d, %s holds %q; want it stored", tt.folder, tt.filename, code, tt.want, f.read(tt.want))
				case tt.err == nil && where != "" && where != (&url.URL{Path: "/" + tt.want}).EscapedPath():
					t.Errorf("folder %q, filename %q: Location %s; want /%s", tt.folder, tt.filename, where, tt.want)
				case tt.err != nil:
					want, _ := wire.Status(tt.err)
					if p, err := largo.ParseName("/" + urlPath); err == nil && largo.Reserved(p) && code == http.StatusNotFound {
						want = code
					}
					if code != want {
						t.Errorf("folder %q, filename %q: %d; want %d (%v)", tt.folder, tt.filename, code, want, tt.err)
					}
				}
			}
			if n := f.staged(); n != 0 {
				t.Errorf("%d uploads left in the staging", n)
			}
		})
	}
}

// status returns the final status of ex, failing t if there is none.
func status(t *testing.T, ex *exchange) int {
	t.Helper()
	if ex.err != nil {
		t.Fatal(ex.err)
	}
	return ex.resp.StatusCode
}

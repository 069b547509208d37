package serve

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"largo/auth"
	"largo/disk"
	"largo/ingest"
	"largo/resumable"
)

// answers is every status the handler may give; anything else, a 500
// above all, is a bug.
var answers = []int{
	200, 201, 204, 206, 301, 303, 304, 307, 308,
	400, 401, 403, 404, 405, 408, 409, 412, 413, 415, 416, 421, 429,
	501, 503, 507,
}

// FuzzHandler drives the whole handler, writes and resumable uploads on,
// with any method, path, headers and body, on a temporary folder: no
// panic but the deliberate cut of a response already begun, no answer
// outside the documented set, and nothing written outside the folder.
func FuzzHandler(f *testing.F) {
	parent := f.TempDir()
	dir := filepath.Join(parent, "root")
	for name, body := range map[string]string{
		"a.txt": "hello", "dir/b.js": strings.Repeat("let b = 1;\n", 200), "dir/sub/c.bin": "c", ".hidden": "h",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	s, err := disk.Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	g, gated := gatedStore(s, auth.New(auth.OneUser("fuzz-token-0123456789", false), nil), nil)
	writes := ingest.New(ingest.Config{Store: gated, MaxSize: 1 << 20})
	rh, err := resumable.New(resumable.Config{Writes: writes, BasePath: ResumablePrefix, Staging: diskStaging(f, s), State: s.State()})
	if err != nil {
		f.Fatal(err)
	}
	h := New(withPage(Config{
		Store: gated, Gate: g, Writes: writes, Resumable: rh, Compress: newEncoders(f, 2),
		Access: g.Access(), Hosts: LoopbackHosts,
	}))

	seeds := []struct{ method, path, header, body string }{
		{"GET", "/a.txt", "Range: bytes=0-2", ""},
		{"GET", "/dir/", "Accept: application/json", ""},
		{"GET", "/dir/?archive=zip", "", ""},
		{"GET", "/dir/b.js", "Accept-Encoding: gzip, br;q=0.5\nIf-None-Match: \"x\"", ""},
		{"PUT", "/new.txt", "Authorization: Bearer fuzz-token-0123456789\nIf-None-Match: *", "body"},
		{"PUT", "/../escape.txt", "Authorization: Bearer fuzz-token-0123456789", "x"},
		{"POST", "/dir/", "Authorization: Bearer fuzz-token-0123456789\nContent-Type: multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f.txt\"\r\n\r\nf\r\n--b--\r\n"},
		{"DELETE", "/dir/sub/c.bin", "Authorization: Bearer fuzz-token-0123456789", ""},
		{"POST", "/_largo/uploads/", "Authorization: Bearer fuzz-token-0123456789\nTus-Resumable: 1.0.0\nUpload-Length: 3\nUpload-Metadata: filename eC50eHQ=", ""},
		{"GET", "/_largo/s/v1.r.9999999999.ZGly.AAAA/", "", ""},
		{"GET", "/?login=/dir/", "Authorization: Basic OmZ1enotdG9rZW4tMDEyMzQ1Njc4OQ==", ""},
		{"OPTIONS", "/", "Origin: https://evil.example\nAccess-Control-Request-Method: PUT", ""},
	}
	for _, sd := range seeds {
		f.Add(sd.method, sd.path, sd.header, []byte(sd.body))
	}
	f.Fuzz(func(t *testing.T, method, target, header string, body []byte) {
		if !validMethod(method) || len(target) == 0 || target[0] != '/' || strings.ContainsAny(target, " \r\n\x00") {
			return // not a request a server would parse
		}
		req, err := http.NewRequest(method, "http://127.0.0.1"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Host, req.RemoteAddr = "127.0.0.1", "127.0.0.1:1234"
		for line := range strings.SplitSeq(header, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && validToken(k) && !strings.ContainsAny(v, "\r\x00") {
				req.Header.Add(k, strings.TrimSpace(v))
			}
		}
		rec := httptest.NewRecorder()
		func() {
			defer func() {
				if v := recover(); v != nil && v != http.ErrAbortHandler {
					t.Fatalf("%s %s: panic %v", method, target, v)
				}
			}()
			h.ServeHTTP(rec, req)
		}()
		if !slices.Contains(answers, rec.Code) {
			t.Errorf("%s %s %q: %d %s", method, target, header, rec.Code, rec.Body.String())
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) != 1 || ents[0].Name() != "root" {
			t.Fatalf("%s %s wrote outside the folder: %v", method, target, ents)
		}
	})
}

func validMethod(m string) bool { return m != "" && validToken(m) }

// validToken reports whether s is an HTTP token, as a header name or a
// method must be.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}

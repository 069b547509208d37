package encode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// testLog returns n bytes of a web server's access log: the kind of text
// largo is asked to compress, with realistic redundancy.
func testLog(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	paths := []string{"/", "/api/v1/users", "/api/v1/orders", "/static/app.js", "/static/style.css", "/img/logo.svg", "/healthz"}
	agents := []string{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "curl/8.5.0", "Go-http-client/1.1"}
	var b bytes.Buffer
	t := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for b.Len() < n {
		t = t.Add(time.Duration(r.IntN(200)) * time.Millisecond)
		fmt.Fprintf(&b, "10.%d.%d.%d - - [%s] \"GET %s HTTP/1.1\" %d %d \"-\" \"%s\" rt=%.3f\n",
			r.IntN(4), r.IntN(256), r.IntN(256), t.Format("02/Jan/2006:15:04:05 -0700"), paths[r.IntN(len(paths))],
			[]int{200, 200, 200, 200, 304, 404}[r.IntN(6)], r.IntN(50000), agents[r.IntN(len(agents))], r.Float64())
	}
	return b.Bytes()[:n]
}

// serveThrough sends content with http.ServeContent through a Response in
// coding c, as package serve does, and returns the recorded response.
func serveThrough(t *testing.T, e *Encoders, c Coding, req *http.Request, content []byte) (*httptest.ResponseRecorder, error) {
	t.Helper()
	rec := httptest.NewRecorder()
	cw, ok := e.Start(rec, c, int64(len(content)))
	if !ok {
		t.Fatal("no free slot")
	}
	rec.Header().Set("Content-Encoding", string(c))
	rec.Header().Set("ETag", `W/"x-`+string(c)+`"`)
	http.ServeContent(cw, req, "f.log", time.Unix(1e9, 0), bytes.NewReader(content))
	return rec, cw.Close()
}

func decode(t *testing.T, c Coding, b []byte) []byte {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), c)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: decoding: %v", c, err)
	}
	return out
}

func TestResponseRoundTrip(t *testing.T) {
	content := testLog(1 << 20)
	for _, level := range []Level{Fast, Default, Best} {
		e, err := NewEncoders(Config{Level: level, MaxStreams: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range Codings {
			for range 2 { // the second time with a pooled encoder
				rec, err := serveThrough(t, e, c, httptest.NewRequest("GET", "/f.log", nil), content)
				if err != nil || rec.Code != 200 {
					t.Fatalf("%v %s: %d %v", level, c, rec.Code, err)
				}
				if rec.Header().Get("Content-Length") != "" || rec.Header().Get("Content-Encoding") != string(c) {
					t.Errorf("%v %s: header %v", level, c, rec.Header())
				}
				if rec.Body.Len() > len(content)/3 {
					t.Errorf("%v %s: %d bytes from %d: not compressed", level, c, rec.Body.Len(), len(content))
				}
				if !bytes.Equal(decode(t, c, rec.Body.Bytes()), content) {
					t.Fatalf("%v %s: decoded body differs", level, c)
				}
			}
		}
		if e.Active() != 0 {
			t.Errorf("%d slots still taken after Close", e.Active())
		}
	}
}

func TestResponseEmptyBody(t *testing.T) {
	e, _ := NewEncoders(Config{})
	for _, c := range Codings {
		rec, err := serveThrough(t, e, c, httptest.NewRequest("GET", "/f.log", nil), nil)
		if err != nil || len(decode(t, c, rec.Body.Bytes())) != 0 || rec.Body.Len() == 0 {
			t.Errorf("%s: empty body: %v, %d bytes", c, err, rec.Body.Len())
		}
	}
}

func TestResponsePassesThrough(t *testing.T) {
	e, _ := NewEncoders(Config{})
	content := testLog(10000)
	// A 304: no body, no encoder.
	req := httptest.NewRequest("GET", "/f.log", nil)
	req.Header.Set("If-None-Match", `W/"x-gzip"`)
	rec, err := serveThrough(t, e, Gzip, req, content)
	if err != nil || rec.Code != 304 || rec.Body.Len() != 0 {
		t.Errorf("304: %d, %d bytes, %v", rec.Code, rec.Body.Len(), err)
	}
	// A failed precondition: no body, and no coding claimed.
	req = httptest.NewRequest("GET", "/f.log", nil)
	req.Header.Set("If-Match", `"other"`)
	rec, err = serveThrough(t, e, Gzip, req, content)
	if err != nil || rec.Code != 412 || rec.Header().Get("Content-Encoding") != "" || rec.Body.Len() != 0 {
		t.Errorf("412: %d %q %v %v", rec.Code, rec.Body.String(), rec.Header(), err)
	}
	// HEAD: the headers of the GET, no body.
	rec, err = serveThrough(t, e, Zstd, httptest.NewRequest("HEAD", "/f.log", nil), content)
	if err != nil || rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Encoding") != "zstd" || rec.Header().Get("Content-Length") != "" {
		t.Errorf("HEAD: %d, %d bytes, %v, %v", rec.Code, rec.Body.Len(), rec.Header(), err)
	}
	if e.Active() != 0 {
		t.Errorf("%d slots still taken", e.Active())
	}
}

// shortReader claims more than it has: a file that shrank under the server.
type shortReader struct{ *bytes.Reader }

func (s shortReader) Seek(off int64, whence int) (int64, error) {
	if whence == io.SeekEnd {
		return int64(s.Len()) + 1000 + off, nil // the old, larger size
	}
	return s.Reader.Seek(off, whence)
}

func TestResponseShortBody(t *testing.T) {
	e, _ := NewEncoders(Config{})
	content := testLog(50000)
	rec := httptest.NewRecorder()
	cw, _ := e.Start(rec, Gzip, int64(len(content))+1000)
	rec.Header().Set("Content-Encoding", "gzip")
	http.ServeContent(cw, httptest.NewRequest("GET", "/f.log", nil), "f.log", time.Time{}, shortReader{bytes.NewReader(content)})
	if err := cw.Close(); !errors.Is(err, ErrShortBody) {
		t.Fatalf("Close: %v; want ErrShortBody", err)
	}
	// The stream must not end cleanly: a decoder sees it cut.
	r, err := NewReader(bytes.NewReader(rec.Body.Bytes()), Gzip)
	if err == nil {
		_, err = io.ReadAll(r)
	}
	if err == nil {
		t.Error("a short compressed body decodes as complete")
	}
	if e.Active() != 0 {
		t.Error("slot kept after a short body")
	}
}

func TestSlotsBound(t *testing.T) {
	e, _ := NewEncoders(Config{MaxStreams: 2})
	a, ok1 := e.Start(httptest.NewRecorder(), Gzip, 0)
	b, ok2 := e.Start(httptest.NewRecorder(), Zstd, 0)
	_, ok3 := e.Start(httptest.NewRecorder(), Brotli, 0)
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("slots: %v %v %v; want two then none", ok1, ok2, ok3)
	}
	a.Close()
	a.Close() // idempotent: frees one slot once
	if _, ok := e.Start(httptest.NewRecorder(), Brotli, 0); !ok {
		t.Error("no slot after Close")
	}
	if _, ok := e.Start(httptest.NewRecorder(), Brotli, 0); ok {
		t.Error("double Close freed two slots")
	}
	b.Close()
	if _, ok := e.Start(httptest.NewRecorder(), Identity, 0); ok {
		t.Error("Start accepted identity")
	}
}

func TestConfig(t *testing.T) {
	if _, err := NewEncoders(Config{Level: Max}); err == nil {
		t.Error("Max accepted for responses")
	}
	if _, err := NewEncoders(Config{MaxStreams: -1}); err == nil {
		t.Error("negative MaxStreams accepted")
	}
	for _, s := range Levels {
		l, err := ParseLevel(s)
		if err != nil || l.String() != s {
			t.Errorf("ParseLevel(%q) = %v, %v", s, l, err)
		}
	}
	if _, err := ParseLevel("ultra"); err == nil {
		t.Error("ParseLevel accepted ultra")
	}
}

func TestSidecarNames(t *testing.T) {
	for name, want := range map[string]string{
		"app.js.gz":    "app.js gzip",
		"a/b.json.br":  "a/b.json br",
		"x.log.zst":    "x.log zstd",
		"backup.tgz":   "",
		".gz":          "",
		"dir/.gz":      "",
		"archive.gzip": "",
	} {
		base, c, ok := SidecarBase(name)
		got := ""
		if ok {
			got = base + " " + string(c)
			if Sidecar(base, c) != name {
				t.Errorf("Sidecar(%q, %s) = %q", base, c, Sidecar(base, c))
			}
		}
		if got != want {
			t.Errorf("SidecarBase(%q) = %q; want %q", name, got, want)
		}
	}
}

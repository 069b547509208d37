package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"largo"
	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/resumable"
)

// commitFailing is a folder whose commits fail with err, whichever way the
// bytes came: created (PUT, form) or adopted (tus).
type commitFailing struct {
	*disk.Store
	err error
}

type commitFailingUpload struct {
	largo.Upload
	err error
}

func (u commitFailingUpload) Commit(context.Context, largo.Condition) (largo.Info, bool, error) {
	u.Upload.Abort()
	return largo.Info{}, false, u.err
}

func (s commitFailing) Create(ctx context.Context, name string, opt largo.CreateOptions) (largo.Upload, error) {
	u, err := s.Store.Create(ctx, name, opt)
	if err != nil {
		return nil, err
	}
	return commitFailingUpload{u, s.err}, nil
}

func (s commitFailing) Adopt(ctx context.Context, name, staged string, opt largo.CreateOptions) (largo.Upload, error) {
	u, err := s.Store.Adopt(ctx, name, staged, opt)
	if err != nil {
		return nil, err
	}
	return commitFailingUpload{u, s.err}, nil
}

// TestOneStatusTable sends the same store failure through PUT, a form
// POST and a tus upload: each protocol must answer the status and reason
// of the one table.
func TestOneStatusTable(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("x: %w", largo.ErrTooLarge), 413},
		{fmt.Errorf("x: %w", largo.ErrPermission), 403},
		{fmt.Errorf("x: %w", largo.ErrNoSpace), 507},
		{fmt.Errorf("x: %w", largo.ErrPrecondition), 412},
		// At a commit, a missing or wrong folder is a conflict, not a
		// missing file.
		{fmt.Errorf("x: %w", largo.ErrNotFound), 409},
		{fmt.Errorf("x: %w", largo.ErrNotDir), 409},
		{fmt.Errorf("x: %w", largo.ErrIsDir), 409},
		{fmt.Errorf("x: %w", largo.ErrUnsupported), 501},
		{errors.New("disk on fire"), 500},
	} {
		storeErr := tt.err
		t.Run(storeErr.Error(), func(t *testing.T) {
			_, dir := newTestHandler(t, nil)
			d, err := disk.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			g := gate.New(gate.Config{Access: auth.New(auth.OneUser("", true), nil)})
			st := g.Store(commitFailing{d, storeErr})
			writes := ingest.New(ingest.Config{Store: st})
			rh, err := resumable.New(resumable.Config{Writes: writes, BasePath: ResumablePrefix, Staging: diskStaging(t, d), State: d.State()})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(New(Config{Store: st, Gate: g, Writes: writes, Resumable: rh}))
			t.Cleanup(srv.Close)
			code, reason := answer(t, put(t, srv.URL+"/a.txt", "hello"))
			if code != tt.code {
				t.Fatalf("PUT: %d %s; want %d", code, reason, tt.code)
			}
			if c, r := answer(t, postFile(t, srv.URL+"/", "b.txt", "hello")); c != code || r != reason {
				t.Errorf("POST: %d %q; PUT said %d %q", c, r, code, reason)
			}
			// The same words as a PUT's, with no tus error code before them.
			if c, r := answer(t, tusUpload(t, srv.URL, "c.txt", "hello")); c != code || r != reason {
				t.Errorf("tus: %d %q; PUT said %d %q", c, r, code, reason)
			}
		})
	}
}

// answer returns a response's status and its one-line reason.
func answer(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func put(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	return roundTrip(t, req)
}

func postFile(t *testing.T, url, filename, body string) *http.Response {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", filename)
	io.WriteString(fw, body)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, url, &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return roundTrip(t, req)
}

// tusUpload creates a tus upload and sends all of it in one PATCH, and
// returns the PATCH's answer.
func tusUpload(t *testing.T, base, filename, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+ResumablePrefix, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", fmt.Sprint(len(body)))
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(filename)))
	resp := roundTrip(t, req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("tus creation: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPatch, base+resp.Header.Get("Location"), strings.NewReader(body))
	if !strings.HasPrefix(resp.Header.Get("Location"), "/") {
		req, _ = http.NewRequest(http.MethodPatch, resp.Header.Get("Location"), strings.NewReader(body))
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", "0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	return roundTrip(t, req)
}

func roundTrip(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	req.SetBasicAuth("", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

package reply

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"largo"
	"largo/transfer"
	"largo/wire"
)

// TestFail: each error is answered with the status, reason and headers of
// its row, and a handler's error reaches Fail through Handler.
func TestFail(t *testing.T) {
	sum := make([]byte, 32)
	for _, tt := range []struct {
		err          error
		code         int
		reason       string
		header, want string
	}{
		{&MethodError{Allow: "GET, HEAD"}, 405, "method not allowed", "Allow", "GET, HEAD"},
		{fmt.Errorf("x: %w", largo.ErrUnauthorized), 401, "unauthorized", "WWW-Authenticate", `Bearer realm="largo"`},
		{wire.Refuse(http.StatusTooManyRequests, "slow down"), 429, "slow down", "Retry-After", "1"},
		{fmt.Errorf("x: %w", largo.ErrBusy), 503, "busy", "Retry-After", "1"},
		{&largo.DigestError{SHA256: sum}, 400, "digest mismatch", "Repr-Digest", wire.FormatDigest(sum)},
		{ErrNoEndpoint, 404, "not found", "Cache-Control", "no-store"},
		{errors.New("disk on fire"), 500, "internal error", "Content-Type", "text/plain; charset=utf-8"},
	} {
		h := Errors{}.Handler(func(w http.ResponseWriter, _ *http.Request) error {
			w.Header().Set("ETag", `"stale"`) // what described the body the error replaces
			return tt.err
		})
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", "/x", nil))
		if rec.Code != tt.code || !strings.HasPrefix(rec.Body.String(), tt.reason) || !strings.HasPrefix(rec.Header().Get(tt.header), tt.want) || rec.Header().Get("ETag") != "" {
			t.Errorf("%v: %d %q %v; want %d %q with %s: %s", tt.err, rec.Code, rec.Body, rec.Header(), tt.code, tt.reason, tt.header, tt.want)
		}
		if code, reason := Status(tt.err); code != tt.code || !strings.HasPrefix(reason, tt.reason) {
			t.Errorf("Status(%v) = %d %q", tt.err, code, reason)
		}
	}
}

// TestFailCuts: an error after the response began cuts the connection
// rather than ending a wrong answer as if it were whole.
func TestFailCuts(t *testing.T) {
	rec := httptest.NewRecorder()
	tw := transfer.NewResponse(rec, transfer.Options{})
	tw.WriteHeader(http.StatusOK)
	tw.Write([]byte("part"))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v; want http.ErrAbortHandler", v)
		}
		if rec.Code != http.StatusOK || rec.Body.String() != "part" {
			t.Errorf("the begun answer was changed: %d %q", rec.Code, rec.Body)
		}
	}()
	Errors{}.Fail(tw, httptest.NewRequest("GET", "/x", nil), errors.New("store lost"))
	t.Error("Fail returned on a begun response")
}

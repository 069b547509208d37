package resumable

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"largo/auth"
	"largo/gate"
	"largo/ingest"
	"largo/quota"
)

// quotaPolicy gives alice a quota of 1,000 bytes in 2 files.
type quotaPolicy struct{}

func (quotaPolicy) UserQuota(u string) (auth.Quota, bool) {
	return auth.Quota{Bytes: 1000, Files: 2}, u == "alice"
}
func (quotaPolicy) PathQuotas() []auth.Quota { return nil }

// stagedBytes returns the bytes of the staged files (not their records).
func (f *fixture) stagedBytes(t *testing.T) int64 {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(f.dir, ".largo", "tus"))
	var n int64
	for _, e := range ents {
		if strings.Contains(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// offsetOf returns an upload's offset, -1 when there is none.
func (f *fixture) offsetOf(t *testing.T, url string, user ...string) int64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodHead, url, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if len(user) > 0 {
		req.SetBasicAuth(user[0], "")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 404 {
		return -1
	}
	n, _ := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	return n
}

// TestDeferredLengthAdmitted: a tus upload whose length is not known is
// held to the size limit as its chunks arrive: a chunk past it is refused
// before it is staged, and the upload goes on from where it was.
func TestDeferredLengthAdmitted(t *testing.T) {
	f := newFixture(t, Config{}, ingest.Config{MaxSize: 1000})
	url, r := f.create(t, -1, map[string]string{"filename": "big.bin"})
	if r.StatusCode != 201 {
		t.Fatalf("creation: %d", r.StatusCode)
	}
	for _, tt := range []struct {
		at     int64
		body   string
		code   int
		offset int64
	}{
		{0, strings.Repeat("a", 2000), 413, 0},
		{0, strings.Repeat("b", 600), 204, 600},
		{600, strings.Repeat("c", 600), 413, 600},
		{600, strings.Repeat("d", 400), 204, 1000},
	} {
		if r := f.patch(t, url, tt.at, tt.body); r.StatusCode != tt.code {
			t.Errorf("PATCH of %d bytes at %d: %d; want %d", len(tt.body), tt.at, r.StatusCode, tt.code)
		}
		if got := f.offsetOf(t, url); got != tt.offset || f.stagedBytes(t) != tt.offset {
			t.Errorf("after %d bytes at %d: offset %d, %d bytes staged; want %d", len(tt.body), tt.at, got, f.stagedBytes(t), tt.offset)
		}
	}
}

// TestDeferredLengthQuota: a user's upload of unknown length holds what
// it staged against her quota, which refuses a chunk past it before it is
// staged and other writes past what it holds; refused at its end, the
// upload leaves nothing staged.
func TestDeferredLengthQuota(t *testing.T) {
	f := newFixture(t, Config{})
	st := f.h.cfg.Writes.Store()
	k := quota.New(quota.Config{Store: st, State: f.h.state, Policy: func() quota.Policy { return quotaPolicy{} }})
	writes := ingest.New(ingest.Config{Store: st, Quota: k})
	f.h.cfg.Writes = writes
	alice := gate.With(context.Background(), gate.User("alice"))
	put := func(name string, size int) error {
		w, err := writes.Begin(alice, ingest.Target{Name: name, Size: int64(size)})
		if err != nil {
			return err
		}
		defer w.Abort()
		if _, err := w.ReadFrom(strings.NewReader(strings.Repeat("p", size))); err != nil {
			return err
		}
		_, err = w.Commit(alice)
		return err
	}
	if err := put("a/one", 900); err != nil {
		t.Fatal(err)
	}
	url, r := f.create(t, -1, map[string]string{"filename": "a/two"}, "Authorization", basic("alice"))
	if r.StatusCode != 201 {
		t.Fatalf("creation with 100 bytes left: %d", r.StatusCode)
	}
	if r := f.patch(t, url, 0, strings.Repeat("x", 5000), "Authorization", basic("alice")); r.StatusCode != 507 {
		t.Errorf("5,000 bytes with 100 left: %d; want 507", r.StatusCode)
	}
	if r := f.patch(t, url, 0, strings.Repeat("x", 60), "Authorization", basic("alice")); r.StatusCode != 204 {
		t.Errorf("60 bytes with 100 left: %d; want 204", r.StatusCode)
	}
	if n := f.stagedBytes(t); n != 60 {
		t.Errorf("%d bytes staged; want 60", n)
	}
	// What the upload holds is no one else's.
	if err := put("a/three", 50); err == nil {
		t.Error("a write of 50 bytes while the upload holds 60 of the 100 left was taken")
	}
	if err := put("a/small", 1); err != nil {
		t.Fatalf("a write that fits: %v", err)
	}
	// Its end: a third file over her quota of two. The upload goes whole.
	if r := f.patch(t, url, 60, "", "Authorization", basic("alice"), "Upload-Length", "60"); r.StatusCode != 507 {
		t.Errorf("the end of an upload over the files quota: %d; want 507", r.StatusCode)
	}
	if n := f.stateFiles(t); n != 0 {
		t.Errorf("%d files left in the staging after the final refusal", n)
	}
	if got := f.offsetOf(t, url, "alice"); got != -1 {
		t.Errorf("the refused upload still answers, offset %d", got)
	}
	if l := k.Report(); len(l) == 0 || l[0].Held != (quota.Usage{}) {
		t.Errorf("held after the upload ended: %+v", l)
	}
}

// basic is the Authorization field of user, for asUser.
func basic(user string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, "")
	return req.Header.Get("Authorization")
}

// TestPartialsChecked: placed partials are checked against the file
// they declare before anything is staged: a length no space could take
// is refused (no sparse file made), ranges that overlap or lie outside
// the file are refused, and the same range again is taken.
func TestPartialsChecked(t *testing.T) {
	f := newFixture(t, Config{})
	for _, tt := range []struct {
		what            string
		size, at, total int
		code            int
	}{
		{"a terabyte file", 10, 1<<40 - 10, 1 << 40, 507},
		{"an exabyte file", 10, 1<<62 - 10, 1 << 62, 507},
		{"outside the file", 100, 150, 200, 400},
	} {
		if _, r := f.partial(t, "huge.bin", tt.size, "hugefile1", tt.at, tt.total); r.StatusCode != tt.code {
			t.Errorf("%s: %d; want %d", tt.what, r.StatusCode, tt.code)
		}
	}
	if n := f.stateFiles(t); n != 0 {
		t.Errorf("%d files staged by refused partials", n)
	}
	for _, tt := range []struct {
		what            string
		size, at, total int
		code            int
	}{
		{"the first piece", 100, 0, 200, 201},
		{"an overlapping piece", 100, 50, 200, 409},
		{"the first piece again", 100, 0, 200, 201},
		{"another length of file", 100, 100, 300, 409},
		{"the second piece", 100, 100, 200, 201},
		{"a piece across both", 20, 90, 200, 409},
	} {
		if _, r := f.partial(t, "pieces.bin", tt.size, "piecesfile", tt.at, tt.total); r.StatusCode != tt.code {
			t.Errorf("%s: %d; want %d", tt.what, r.StatusCode, tt.code)
		}
	}
	fi, err := os.Stat(filepath.Join(f.dir, ".largo", "tus", groupKey("anonymous", "piecesfile")))
	if err == nil && fi.Size() != 200 {
		t.Errorf("the group's file is %d bytes; want 200", fi.Size())
	}
}

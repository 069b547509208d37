package client

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// testDownload is a download of a file of dir, with its log kept.
func testDownload(t *testing.T, url string) (*download, *[]string) {
	t.Helper()
	var log []string
	c := &Client{Logf: func(f string, args ...any) { log = append(log, fmt.Sprintf(f, args...)) }}
	path := filepath.Join(t.TempDir(), "f.bin")
	return &download{c: c, url: url, path: path, part: path + ".part", prog: c.progress(), res: Result{Path: path}}, &log
}

// TestResumePoints: unsynced bytes are trusted within the boot that wrote
// them and only then; the state records the boot, and every segment's
// Written restarts where it resumes.
func TestResumePoints(t *testing.T) {
	segs := []segment{
		{Start: 0, End: 100, Done: 10, Written: 60},
		{Start: 100, End: 200, Done: 100, Written: 100},
		{Start: 200, End: 300, Done: 0, Written: 500}, // beyond the segment: never trusted
	}
	for _, tt := range []struct {
		saved, now string
		want       []int64
	}{
		{"boot-a", "boot-a", []int64{60, 100, 0}},
		{"boot-a", "boot-b", []int64{10, 100, 0}},
		{"", "", []int64{10, 100, 0}},
	} {
		st := &partState{Size: 300, Boot: tt.saved, Segments: append([]segment(nil), segs...)}
		run := &segmentRun{st: st}
		have := run.resume(tt.now)
		var sum int64
		for i, s := range run.segs {
			from := s.done.Load()
			sum += from
			if from != tt.want[i] || st.Segments[i].Written != from || st.Segments[i].Done != segs[i].Done {
				t.Errorf("saved in %q, now %q: segment %d resumes at %d (state %+v); want %d, Done kept", tt.saved, tt.now, i, from, st.Segments[i], tt.want[i])
			}
		}
		if have != sum || st.Boot != tt.now {
			t.Errorf("saved in %q, now %q: have %d (sum %d), boot %q", tt.saved, tt.now, have, sum, st.Boot)
		}
	}
}

// TestSnapshot: a save without sync records what was written; only a sync
// counts it as done. Both reach the state file.
func TestSnapshot(t *testing.T) {
	d, _ := testDownload(t, "http://127.0.0.1/f.bin")
	f, err := os.Create(d.part)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st := &partState{URL: d.url, Size: 200, Segments: []segment{{Start: 0, End: 100}, {Start: 100, End: 200}}}
	run := &segmentRun{d: d, f: f, st: st}
	run.resume("")
	run.segs[0].done.Store(40)
	run.segs[1].done.Store(7)
	for _, sync := range []bool{false, true} {
		if err := run.snapshot(sync); err != nil {
			t.Fatal(err)
		}
		saved, err := loadState(d.part)
		if err != nil || saved == nil {
			t.Fatalf("state after a snapshot: %v, %v", saved, err)
		}
		wantDone := []int64{0, 0}
		if sync {
			wantDone = []int64{40, 7}
		}
		for i, s := range saved.Segments {
			if s.Written != run.segs[i].done.Load() || s.Done != wantDone[i] {
				t.Errorf("sync %v: segment %d saved as %+v; want written %d, done %d", sync, i, s, run.segs[i].done.Load(), wantDone[i])
			}
		}
	}
}

// TestFromZeroOnce: a download starts over from zero once in a run; the
// second time the error ends it.
func TestFromZeroOnce(t *testing.T) {
	d, log := testDownload(t, "http://127.0.0.1/f.bin")
	d.res.Resumed = true
	why := errors.New("the remote file changed")
	if next := d.fromZero(why, fetchSegments, "starting from zero"); next.do != fetchSegments || next.st != nil || next.err != nil || d.res.Resumed {
		t.Fatalf("first start over: %+v, resumed %v", next, d.res.Resumed)
	}
	if len(*log) != 1 || !strings.Contains((*log)[0], "the remote file changed; starting from zero") {
		t.Errorf("log %q", *log)
	}
	if next := d.fromZero(why, fetchSegments, "starting from zero"); next.do != stop || next.err != why {
		t.Fatalf("second start over: %+v; want stop with the error", next)
	}
}

// TestMismatchFresh: content that does not match the digest of a download
// that did not resume is an error at once, not a new download, and its
// bytes are kept aside as FILE.bad, never at FILE.
func TestMismatchFresh(t *testing.T) {
	d, _ := testDownload(t, "http://127.0.0.1/f.bin")
	os.WriteFile(d.part, []byte("bad"), 0o644)
	why := errors.New("digest mismatch")
	if next := d.mismatch(why); next.do != stop || !errors.Is(next.err, why) || !strings.Contains(next.err.Error(), d.path+".bad") {
		t.Fatalf("mismatch of a fresh download: %+v", next)
	}
	if _, err := os.Stat(d.part); !os.IsNotExist(err) {
		t.Errorf("part file kept: %v", err)
	}
	if b, err := os.ReadFile(d.path + ".bad"); string(b) != "bad" || d.res.Aside != d.path+".bad" {
		t.Errorf("kept aside: %q, %v; Result.Aside %q", b, err, d.res.Aside)
	}
	if _, err := os.Stat(d.path); !os.IsNotExist(err) {
		t.Errorf("the target exists: %v", err)
	}
}

// TestStreamAnswers gives a stream that holds part of a file answers of
// every kind, and checks what each leads to and what it does to the part
// file.
func TestStreamAnswers(t *testing.T) {
	for _, tt := range []struct {
		name         string
		size         int64 // the state's size
		status       int
		contentRange string
		want         outcome
		wantOff      int64 // the part file's length after
	}{
		{"the rest", 10, http.StatusPartialContent, "bytes 4-9/10", receive, 4},
		{"a range elsewhere", 10, http.StatusPartialContent, "bytes 2-9/10", restarted, 0},
		{"another size", 10, http.StatusPartialContent, "bytes 4-11/12", restarted, 0},
		{"a bad range", 10, http.StatusPartialContent, "bytes x", restarted, 0},
		{"the whole file", 10, http.StatusOK, "", receive, 0},
		{"the end of a file of unknown size", -1, http.StatusRequestedRangeNotSatisfiable, "bytes */4", complete, 4},
		{"a shorter file", 10, http.StatusRequestedRangeNotSatisfiable, "bytes */3", restarted, 0},
		{"an error", 10, http.StatusNotFound, "", failed, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := testDownload(t, "http://127.0.0.1/f.bin")
			f, err := os.Create(d.part)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.WriteString("abcd")
			st := &partState{URL: d.url, ETag: `"v1"`, Size: tt.size}
			saveState(d.part, st)
			d.res.Resumed = true
			s := &stream{d: d, f: f, st: st, off: 4}
			resp := &http.Response{StatusCode: tt.status, Status: http.StatusText(tt.status), Header: http.Header{"Etag": {`"v1"`}},
				Body: io.NopCloser(strings.NewReader("")), ContentLength: 10, Request: httptest.NewRequest("GET", d.url, nil)}
			if tt.contentRange != "" {
				resp.Header.Set("Content-Range", tt.contentRange)
			}
			out, err := s.answer(resp)
			if out != tt.want || (out == failed) != (err != nil) {
				t.Fatalf("outcome %d, %v; want %d", out, err, tt.want)
			}
			fi, _ := f.Stat()
			if fi.Size() != tt.wantOff || s.off != tt.wantOff && tt.want != receive {
				t.Errorf("part file %d bytes, offset %d; want %d", fi.Size(), s.off, tt.wantOff)
			}
			if tt.want == restarted {
				if _, err := os.Stat(statePath(d.part)); !os.IsNotExist(err) || s.st != nil || d.res.Resumed {
					t.Errorf("after a restart: state file %v, state %+v, resumed %v", err, s.st, d.res.Resumed)
				}
			}
			if tt.want == complete && s.st.Size != 4 {
				t.Errorf("size %d after the end of a file of unknown size", s.st.Size)
			}
		})
	}
}

// TestRestartsBounded: a server that answers every request with a wrong
// range makes a download start over at most maxRestarts times, then fail
// saying why, with no target written.
func TestRestartsBounded(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Range", "bytes 5-99/100")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(make([]byte, 95))
	}))
	defer srv.Close()
	c := &Client{Retries: 5}
	path := filepath.Join(t.TempDir(), "f.bin")
	_, err := c.Get(t.Context(), srv.URL+"/f.bin", path)
	if err == nil || !strings.Contains(err.Error(), "keeps answering ranges wrongly") {
		t.Fatalf("Get: %v", err)
	}
	if n := requests.Load(); n != 1+maxRestarts {
		t.Errorf("%d requests; want %d", n, 1+maxRestarts)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("target written: %v", err)
	}
}

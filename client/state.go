package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// partState is what a download keeps beside its part file (FILE.part.json)
// so that a later run can resume it, and check that the remote file is
// still the one it started.
type partState struct {
	URL          string `json:"url"`
	ETag         string `json:"etag,omitempty"` // strong ETags only
	LastModified string `json:"last_modified,omitempty"`
	Size         int64  `json:"size"` // -1: unknown
	// Digest is the server's Repr-Digest, as "sha-256=:BASE64:".
	Digest string `json:"digest,omitempty"`
	// Segments is nil for one stream, whose progress is the part file's
	// length; for a segmented download it is each segment's progress.
	Segments []segment `json:"segments,omitempty"`
	// Boot identifies the system boot during which Written was saved.
	Boot string `json:"boot,omitempty"`
}

// segment is the byte range [Start, End) of a segmented download. Done
// bytes from Start are in the part file on disk (synced); Written bytes
// were written to it, and are in it at least until the machine stops: a
// killed process loses nothing it wrote, a power cut may.
type segment struct {
	Start   int64 `json:"start"`
	End     int64 `json:"end"`
	Done    int64 `json:"done"`
	Written int64 `json:"written,omitempty"`
}

// resumeFrom is where a segment resumes: after all it wrote when the
// system has not restarted since (the page cache still holds the bytes),
// else after what was synced.
func (s segment) resumeFrom(sameBoot bool) int64 {
	if sameBoot && s.Written > s.Done && s.Written <= s.End-s.Start {
		return s.Written
	}
	return s.Done
}

// bootID identifies the current system boot, or "" where that cannot be
// known (then only synced progress is trusted).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// stateFor returns the state of a fresh download from its first answer.
func stateFor(url string, resp *http.Response, size int64) *partState {
	st := &partState{URL: url, Size: size, Digest: digestHeader(resp), LastModified: resp.Header.Get("Last-Modified")}
	if et := resp.Header.Get("ETag"); !strings.HasPrefix(et, "W/") {
		st.ETag = et
	}
	return st
}

// ifRange is the validator to send in If-Range, or "" when there is none.
func (st *partState) ifRange() string {
	if st.ETag != "" {
		return st.ETag
	}
	return st.LastModified
}

// changed reports whether resp names a different version of the file than
// the one st was started with.
func (st *partState) changed(resp *http.Response) bool {
	if st.ETag != "" {
		return resp.Header.Get("ETag") != st.ETag
	}
	if st.LastModified != "" {
		return resp.Header.Get("Last-Modified") != st.LastModified
	}
	return st.Size >= 0 && resp.ContentLength >= 0 && resp.ContentLength != st.Size
}

func statePath(part string) string { return part + ".json" }

// loadState reads the state beside part; a missing or unreadable one is
// nil, with the reason for an unreadable one.
func loadState(part string) (*partState, error) {
	b, err := os.ReadFile(statePath(part))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st partState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %v", statePath(part), err)
	}
	if st.Size < -1 || !validSegments(st.Segments, st.Size) {
		return nil, fmt.Errorf("%s: inconsistent", statePath(part))
	}
	return &st, nil
}

func validSegments(segs []segment, size int64) bool {
	var next int64
	for _, s := range segs {
		if s.Start != next || s.End <= s.Start || s.Done < 0 || s.Done > s.End-s.Start {
			return false
		}
		next = s.End
	}
	return len(segs) == 0 || next == size
}

// saveState writes st beside part atomically: a crash leaves the old state
// or the new one.
func saveState(part string, st *partState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writeAtomic(statePath(part), b)
}

// writeAtomic replaces path with b through a temporary file and a rename.
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return localError{err}
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return localError{err}
	}
	return nil
}

// removePart removes a part file and its state.
func removePart(part string) {
	os.Remove(part)
	os.Remove(statePath(part))
}

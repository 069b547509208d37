package serve

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"largo"
	"largo/auth"
)

// oddNames are names a folder or a bucket may hold that JSON must
// escape, or that are not UTF-8.
var oddNames = []string{
	"",
	"plain.txt",
	`quote " and backslash \`,
	`<a href="x">&amp;</a>`,
	"tab\tnewline\ncr\rbell\afeed\fback\bnul\x00esc\x1bdel\x7f",
	"ünïcödé, 日本語, emoji 🎉",
	"line\u2028para\u2029sep",
	"latin-1 caf\xe9",
	"lone continuation \x80 and \xbf",
	"cut short \xe6\x97",
	"overlong \xc0\xaf and surrogate \xed\xa0\x80",
	"\xff\xfe",
	"ends in a cut rune \xf0\x9f\x8e",
}

// testDigest is the digest the listings of these tests give a file: one
// for every file of an odd size.
func testDigest(in *largo.Info) string {
	if in.IsDir || in.Size%2 == 0 {
		return ""
	}
	sum := sha256.Sum256([]byte(in.Name))
	return hex.EncodeToString(sum[:])
}

// jsonListing writes the listing of infos at path and returns it.
func jsonListing(t *testing.T, path string, infos []largo.Info, keep func(largo.Info) bool) string {
	t.Helper()
	var out bytes.Buffer
	w := bufio.NewWriterSize(&out, 64) // small, so that entries cross flushes
	seq := func(yield func(largo.Info, error) bool) {
		for _, in := range infos {
			if !yield(in, nil) {
				return
			}
		}
	}
	if err := writeListing(w, path, seq, keep, testDigest, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestJSONString: every string is escaped byte for byte as encoding/json
// escapes it, names that are not UTF-8 included.
func TestJSONString(t *testing.T) {
	for _, s := range oddNames {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// FuzzJSONString checks appendJSONString against encoding/json on any
// bytes.
func FuzzJSONString(f *testing.F) {
	for _, s := range oddNames {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got := appendJSONString([]byte("x"), s)
		if string(got[1:]) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got[1:], want)
		}
	})
}

// TestListingJSON: the listing is valid JSON, one entry a line, each
// entry the bytes encoding/json makes of its Entry, and decodes to the
// same Listing as the pretty-printed listing it replaces.
func TestListingJSON(t *testing.T) {
	mod := time.Date(2025, 3, 14, 15, 9, 26, 123456789, time.UTC)
	var infos []largo.Info
	infos = append(infos,
		largo.Info{Name: "sub", IsDir: true, ModTime: mod},
		largo.Info{Name: "bucket-folder", IsDir: true},
		largo.Info{Name: "big", Size: 1 << 40, ModTime: mod.Add(time.Hour), ETag: `W/"e\1"`},
		largo.Info{Name: "whole second", ModTime: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), ETag: `"e2"`},
		largo.Info{Name: "local time", ModTime: mod.In(time.FixedZone("east", 5*3600))},
	)
	for i, n := range oddNames {
		infos = append(infos, largo.Info{Name: n, Size: int64(i), ModTime: mod, ETag: `"` + n + `"`})
	}
	all := func(largo.Info) bool { return true }
	for _, c := range []struct {
		path  string
		infos []largo.Info
	}{
		{"/", nil},
		{`/a "b"/`, infos[:1]},
		{"/d/\xff<\u2028>/", infos},
	} {
		got := jsonListing(t, c.path, c.infos, all)
		if !json.Valid([]byte(got)) {
			t.Fatalf("%d entries: not valid JSON:\n%s", len(c.infos), got)
		}
		want := Listing{Path: c.path, Entries: []Entry{}}
		p, _ := json.Marshal(c.path)
		wantBytes := `{"path":` + string(p) + `,"entries":[`
		for i, in := range c.infos {
			e := Entry{Name: in.Name, Dir: in.IsDir, Size: in.Size, Modified: in.ModTime.UTC(), ETag: in.ETag, SHA256: testDigest(&in)}
			want.Entries = append(want.Entries, e)
			b, _ := json.Marshal(e)
			if i > 0 {
				wantBytes += ","
			}
			wantBytes += "\n" + string(b)
		}
		if len(c.infos) > 0 {
			wantBytes += "\n"
		}
		wantBytes += "]}\n"
		if got != wantBytes {
			t.Errorf("%d entries:\n got %s\nwant %s", len(c.infos), got, wantBytes)
		}
		// Decoded, the same values as the indented listing of before.
		var wb bytes.Buffer
		enc := json.NewEncoder(&wb)
		enc.SetIndent("", "  ")
		enc.Encode(want)
		var before, after Listing
		if err := json.Unmarshal(wb.Bytes(), &before); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(got), &after); err != nil {
			t.Fatal(err)
		}
		if len(after.Entries) != len(before.Entries) || after.Path != before.Path {
			t.Fatalf("decoded: %d entries at %q, want %d at %q", len(after.Entries), after.Path, len(before.Entries), before.Path)
		}
		for i := range before.Entries {
			if a, b := after.Entries[i], before.Entries[i]; a.Name != b.Name || a.Dir != b.Dir || a.Size != b.Size || !a.Modified.Equal(b.Modified) || a.ETag != b.ETag {
				t.Errorf("entry %d: got %+v, want %+v", i, a, b)
			}
			if utf8.ValidString(c.infos[i].Name) && after.Entries[i].Name != c.infos[i].Name {
				t.Errorf("entry %d: a UTF-8 name changed: %q, want %q", i, after.Entries[i].Name, c.infos[i].Name)
			}
		}
		if lines := strings.Count(got, "\n"); len(c.infos) > 0 && lines != len(c.infos)+2 {
			t.Errorf("%d entries on %d lines", len(c.infos), lines)
		}
	}
}

// TestListingJSONKeep: entries keep refuses are left out, the commas
// stay right whichever ones they are, and an error from the listing
// ends it.
func TestListingJSONKeep(t *testing.T) {
	infos := []largo.Info{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	for _, c := range []struct {
		drop string
		want []string
	}{
		{"", []string{"a", "b", "c", "d"}},
		{"a", []string{"b", "c", "d"}},
		{"d", []string{"a", "b", "c"}},
		{"abcd", nil},
		{"bc", []string{"a", "d"}},
	} {
		got := jsonListing(t, "/", infos, func(in largo.Info) bool { return !strings.Contains(c.drop, in.Name) })
		var l Listing
		if err := json.Unmarshal([]byte(got), &l); err != nil {
			t.Fatalf("dropping %q: %v\n%s", c.drop, err, got)
		}
		var names []string
		for _, e := range l.Entries {
			names = append(names, e.Name)
		}
		if strings.Join(names, ",") != strings.Join(c.want, ",") {
			t.Errorf("dropping %q: %v, want %v", c.drop, names, c.want)
		}
	}

	boom := errors.New("boom")
	seq := func(yield func(largo.Info, error) bool) {
		if yield(largo.Info{Name: "a"}, nil) {
			yield(largo.Info{}, boom)
		}
	}
	w := bufio.NewWriter(&bytes.Buffer{})
	if err := writeListing(w, "/", seq, func(largo.Info) bool { return true }, nil, nil); !errors.Is(err, boom) {
		t.Errorf("a listing that fails: %v, want %v", err, boom)
	}
}

// BenchmarkListingJSON writes the JSON listing of 100,000 entries like a
// disk folder's.
func BenchmarkListingJSON(b *testing.B) {
	mod := time.Date(2025, 3, 14, 15, 9, 26, 123456789, time.UTC)
	infos := make([]largo.Info, 100_000)
	for i := range infos {
		infos[i] = largo.Info{Name: "f" + strings.Repeat("0", 7), Size: int64(i), ModTime: mod.Add(time.Duration(i) * time.Millisecond), ETag: `"9867d2-0-18ed53acb6902e6f"`}
	}
	seq := func(yield func(largo.Info, error) bool) {
		for _, in := range infos {
			if !yield(in, nil) {
				return
			}
		}
	}
	all := func(largo.Info) bool { return true }
	var n countWriter
	w := bufio.NewWriterSize(&n, 32<<10)
	for b.Loop() {
		if err := writeListing(w, "/", seq, all, nil, nil); err != nil {
			b.Fatal(err)
		}
		w.Flush()
	}
	b.SetBytes(n.n / int64(b.N))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(infos)), "ns/entry")
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestListedDigestsBounded: a listing of more than maxListedDigests
// entries leaves "sha256" out, so that it costs no state read per file;
// the files keep their Repr-Digest.
func TestListedDigestsBounded(t *testing.T) {
	h, dir, _ := digestFixture(t, nil, auth.New(auth.OneUser(token, false), nil))
	if rec := send(h, "PUT", "/d/f.txt", strings.NewReader("hello"), 5, "Authorization", "Bearer "+token); rec.Code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	listed := func() bool {
		rec := do(h, "GET", "/d/", "Accept", "application/json")
		var l Listing
		if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || rec.Code != 200 {
			t.Fatalf("listing: %d, %v", rec.Code, err)
		}
		return strings.Contains(rec.Body.String(), `"sha256":"`+hexSum("hello")+`"`)
	}
	if !listed() {
		t.Fatal("a small listing lacks the digest")
	}
	for i := range maxListedDigests {
		if err := os.WriteFile(filepath.Join(dir, "d", fmt.Sprintf("g%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if listed() {
		t.Errorf("a listing of %d entries carries digests", maxListedDigests+1)
	}
	if got := do(h, "HEAD", "/d/f.txt").Header().Get("Repr-Digest"); got != digest("hello") {
		t.Errorf("Repr-Digest %q", got)
	}
}

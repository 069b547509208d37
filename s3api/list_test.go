package s3api

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"largo/disk"
	"largo/gate"
)

// listHandler serves a folder holding files, read-only, to anyone.
func listHandler(t *testing.T, files ...string) *Handler {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, gated := gate.Open(st)
	return New(Config{Store: gated})
}

// listed is what a listing answered.
type listed struct {
	Keys, Prefixes []string
	Truncated      bool
	Next           string
}

// list answers a listing of the bucket with query q, anonymously.
func list(t *testing.T, h *Handler, q string) listed {
	t.Helper()
	r := httptest.NewRequest("GET", "http://h/largo?"+q, nil)
	r, err := h.Identify(r)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("?%s: %d %s", q, w.Code, w.Body)
	}
	var res struct {
		Contents       []struct{ Key string }
		CommonPrefixes []struct{ Prefix string }
		IsTruncated    bool
		Next           string `xml:"NextContinuationToken"`
		NextMarker     string
	}
	if err := xml.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	var out listed
	for _, c := range res.Contents {
		out.Keys = append(out.Keys, c.Key)
	}
	for _, p := range res.CommonPrefixes {
		out.Prefixes = append(out.Prefixes, p.Prefix)
	}
	out.Truncated, out.Next = res.IsTruncated, res.Next+res.NextMarker
	return out
}

// keysOrder are keys whose order differs from a walk's by folder names:
// '-' sorts before '/', and '0' after it.
var keysOrder = []string{"a-c", "a/b", "a/c/d", "a/c/e f", "a0", "ab", "b/x/y/z"}

// TestListOrder: a walk lists keys in S3's order, byte by byte over the
// whole key, and a page resumes after the last key it gave, by
// continuation token, start-after and marker alike.
func TestListOrder(t *testing.T) {
	h := listHandler(t, keysOrder...)
	if got := list(t, h, "list-type=2"); !slices.Equal(got.Keys, keysOrder) || got.Truncated {
		t.Fatalf("all keys: %q, truncated %v; want %q", got.Keys, got.Truncated, keysOrder)
	}
	var paged []string
	for q := "list-type=2&max-keys=2"; ; {
		got := list(t, h, q)
		paged = append(paged, got.Keys...)
		if !got.Truncated {
			break
		}
		q = "list-type=2&max-keys=2&continuation-token=" + got.Next
	}
	if !slices.Equal(paged, keysOrder) {
		t.Errorf("in pages of 2: %q", paged)
	}
	for after, want := range map[string][]string{"a/b": keysOrder[2:], "a/c": keysOrder[2:], "a/c/e f": keysOrder[4:], "a0": keysOrder[5:], "": keysOrder} {
		if got := list(t, h, "list-type=2&start-after="+escape(after)); !slices.Equal(got.Keys, want) {
			t.Errorf("after %q: %q, want %q", after, got.Keys, want)
		}
		if got := list(t, h, "marker="+escape(after)); !slices.Equal(got.Keys, want) {
			t.Errorf("V1 after %q: %q, want %q", after, got.Keys, want)
		}
	}
	if got := list(t, h, "list-type=2&prefix=a%2Fc"); !slices.Equal(got.Keys, []string{"a/c/d", "a/c/e f"}) {
		t.Errorf("prefix a/c: %q", got.Keys)
	}
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, " ", "%20"), "/", "%2F")
}

// TestListDelimiter: with the delimiter, one folder's files and its
// folders as common prefixes, in key order, paged across both; a prefix
// within a name's element.
func TestListDelimiter(t *testing.T) {
	h := listHandler(t, keysOrder...)
	got := list(t, h, "list-type=2&delimiter=%2F")
	if !slices.Equal(got.Keys, []string{"a-c", "a0", "ab"}) || !slices.Equal(got.Prefixes, []string{"a/", "b/"}) {
		t.Errorf("the root: keys %q, prefixes %q", got.Keys, got.Prefixes)
	}
	got = list(t, h, "list-type=2&delimiter=%2F&prefix=a%2F")
	if !slices.Equal(got.Keys, []string{"a/b"}) || !slices.Equal(got.Prefixes, []string{"a/c/"}) {
		t.Errorf("a/: keys %q, prefixes %q", got.Keys, got.Prefixes)
	}
	got = list(t, h, "list-type=2&delimiter=%2F&max-keys=2")
	if !slices.Equal(got.Keys, []string{"a-c"}) || !slices.Equal(got.Prefixes, []string{"a/"}) || !got.Truncated {
		t.Fatalf("the first page of 2: %+v", got)
	}
	got = list(t, h, "list-type=2&delimiter=%2F&max-keys=2&continuation-token="+got.Next)
	if !slices.Equal(got.Keys, []string{"a0", "ab"}) || len(got.Prefixes) != 0 {
		t.Errorf("the second page: %+v", got)
	}
	if got := list(t, h, "list-type=2&delimiter=%2F&prefix=a%2Fc%2Fe"); !slices.Equal(got.Keys, []string{"a/c/e f"}) {
		t.Errorf("prefix a/c/e: %q", got.Keys)
	}
	if got := list(t, h, "list-type=2&delimiter=%2F&encoding-type=url&prefix=a%2Fc%2F"); !slices.Equal(got.Keys, []string{"a/c/d", "a/c/e%20f"}) {
		t.Errorf("encoding-type=url: %q", got.Keys)
	}
}

// TestListOtherDelimiter: a delimiter other than "/" groups the keys of
// a walk that share a common prefix into one, itself included when it
// ends with the delimiter, and a page that ends on a common prefix
// resumes after every key it stands for.
func TestListOtherDelimiter(t *testing.T) {
	h := listHandler(t, keysOrder...)
	// keysOrder: a-c a/b a/c/d "a/c/e f" a0 ab b/x/y/z
	got := list(t, h, "list-type=2&delimiter=c")
	if !slices.Equal(got.Keys, []string{"a/b", "a0", "ab", "b/x/y/z"}) || !slices.Equal(got.Prefixes, []string{"a-c", "a/c"}) {
		t.Errorf("delimiter c: keys %q, prefixes %q", got.Keys, got.Prefixes)
	}
	got = list(t, h, "list-type=2&delimiter=%20&prefix=a%2Fc%2F")
	if !slices.Equal(got.Keys, []string{"a/c/d"}) || !slices.Equal(got.Prefixes, []string{"a/c/e "}) {
		t.Errorf("delimiter space, prefix a/c/: keys %q, prefixes %q", got.Keys, got.Prefixes)
	}
	var keys, prefixes []string
	for q := "delimiter=c&max-keys=1"; ; {
		got := list(t, h, q)
		if len(got.Keys)+len(got.Prefixes) != 1 {
			t.Fatalf("?%s: %+v; want one entry", q, got)
		}
		keys, prefixes = append(keys, got.Keys...), append(prefixes, got.Prefixes...)
		if !got.Truncated {
			break
		}
		q = "delimiter=c&max-keys=1&marker=" + escape(got.Next)
	}
	if !slices.Equal(keys, []string{"a/b", "a0", "ab", "b/x/y/z"}) || !slices.Equal(prefixes, []string{"a-c", "a/c"}) {
		t.Errorf("in pages of 1: keys %q, prefixes %q", keys, prefixes)
	}
	// No key begins with a slash, whatever the delimiter.
	for _, q := range []string{"prefix=%2F", "prefix=%2F&delimiter=%2F", "prefix=%2F&delimiter=d", "list-type=2&prefix=%2Fa"} {
		if got := list(t, h, q); len(got.Keys)+len(got.Prefixes) != 0 {
			t.Errorf("?%s: %+v; want nothing", q, got)
		}
	}
}

// TestListEcho: ListObjectsV2 echoes a continuation token even empty,
// and encodes its prefix with encoding-type=url; ListObjects answers its
// prefix as asked (the SDKs decode V2's and not V1's).
func TestListEcho(t *testing.T) {
	h := listHandler(t, keysOrder...)
	body := func(q string) string {
		r, err := h.Identify(httptest.NewRequest("GET", "http://h/largo?"+q, nil))
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("?%s: %d %s", q, w.Code, w.Body)
		}
		return w.Body.String()
	}
	if b := body("list-type=2&continuation-token="); !strings.Contains(b, "<ContinuationToken></ContinuationToken>") {
		t.Errorf("an empty continuation token is not echoed: %s", b)
	}
	if b := body("list-type=2"); strings.Contains(b, "ContinuationToken>") {
		t.Errorf("a continuation token echoed that was not asked: %s", b)
	}
	if b := body("list-type=2&encoding-type=url&prefix=a%20b"); !strings.Contains(b, "<Prefix>a%20b</Prefix>") {
		t.Errorf("V2's prefix not encoded: %s", b)
	}
	if b := body("encoding-type=url&prefix=a%20b"); !strings.Contains(b, "<Prefix>a b</Prefix>") {
		t.Errorf("V1's prefix not as asked: %s", b)
	}
}

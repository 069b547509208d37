package ui

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"largo"
)

func TestCompareNames(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"a", "b", -1},
		{"B", "a", 1},
		{"file2", "file10", -1},
		{"file10", "file2", 1},
		{"file02", "file2", -1}, // equal by value: code points decide
		{"file2", "file2", 0},
		{"x9y", "x10", -1},
		{"Ärger", "arger", 1},
		{"a", "ab", -1},
		{"", "a", -1},
		{"10", "9", 1},
		{"img", "IMG", 1}, // equal ignoring case: code points decide
		{"0001", "1", -1},
		{"a1b2", "a1b10", -1},
	} {
		if got := CompareNames(c.a, c.b); got != c.want {
			t.Errorf("CompareNames(%q, %q) = %d; want %d", c.a, c.b, got, c.want)
		}
		if got := CompareNames(c.b, c.a); got != -c.want {
			t.Errorf("CompareNames(%q, %q) = %d; want %d", c.b, c.a, got, -c.want)
		}
	}
}

func FuzzCompareNames(f *testing.F) {
	f.Add("file2", "file10", "file3")
	f.Add("Ab", "aB", "a0b")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		if CompareNames(a, b) != -CompareNames(b, a) {
			t.Fatalf("not antisymmetric: %q %q", a, b)
		}
		if (CompareNames(a, b) == 0) != (a == b) {
			t.Fatalf("%q and %q compare equal", a, b)
		}
		if CompareNames(a, b) <= 0 && CompareNames(b, c) <= 0 && CompareNames(a, c) > 0 {
			t.Fatalf("not transitive: %q %q %q", a, b, c)
		}
	})
}

func TestParseView(t *testing.T) {
	for _, c := range []struct {
		query string
		want  View
		back  string // the view's own query
	}{
		{"", View{Sort: SortName}, "?order=asc&sort=name"},
		{"sort=size", View{Sort: SortSize, Desc: true}, "?order=desc&sort=size"},
		{"sort=modified&order=asc", View{Sort: SortModified}, "?order=asc&sort=modified"},
		{"sort=name&order=desc&q=+a+b+", View{Sort: SortName, Desc: true, Filter: "a b"}, "?order=desc&q=a+b&sort=name"},
		{"sort=evil&order=sideways", View{Sort: SortName}, "?order=asc&sort=name"},
	} {
		q, _ := url.ParseQuery(c.query)
		got := ParseView(q)
		if got != c.want {
			t.Errorf("ParseView(%q) = %+v; want %+v", c.query, got, c.want)
		}
		if back := got.Query(); back != c.back {
			t.Errorf("%+v.Query() = %q; want %q", got, back, c.back)
		}
	}
	long := strings.Repeat("é", maxFilter)
	if v := ParseView(url.Values{"q": {long}}); len(v.Filter) > maxFilter || !strings.HasPrefix(long, v.Filter) {
		t.Errorf("long filter kept as %d bytes", len(v.Filter))
	}
}

func TestApply(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2025, 1, 1, h, 0, 0, 0, time.UTC) }
	entries := []Entry{
		{Name: "file10", Size: 5, Modified: at(3)},
		{Name: "b", Dir: true, Modified: at(1)},
		{Name: "File2", Size: 50, Modified: at(1)},
		{Name: "a", Dir: true, Modified: at(2)},
		{Name: "zz", Size: 5, Modified: at(2)},
	}
	names := func(es []Entry) []string {
		var n []string
		for _, e := range es {
			n = append(n, e.Name)
		}
		return n
	}
	for _, c := range []struct {
		view View
		want []string
	}{
		{View{}, []string{"a", "b", "File2", "file10", "zz"}},
		{View{Desc: true}, []string{"b", "a", "zz", "file10", "File2"}},
		{View{Sort: SortSize, Desc: true}, []string{"a", "b", "File2", "file10", "zz"}},
		{View{Sort: SortSize}, []string{"a", "b", "file10", "zz", "File2"}},
		{View{Sort: SortModified, Desc: true}, []string{"a", "b", "file10", "zz", "File2"}},
		{View{Filter: "FILE"}, []string{"File2", "file10"}},
		{View{Filter: "nothing"}, nil},
	} {
		if got := names(c.view.Apply(entries)); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %q; want %q", c.view, got, c.want)
		}
	}
	if entries[0].Name != "file10" {
		t.Error("Apply changed its argument")
	}
}

// render renders f, with a nonce when it has none.
func render(t *testing.T, u *UI, f Folder) string {
	t.Helper()
	if f.Nonce == "" {
		f.Nonce = "n0nce"
	}
	var b bytes.Buffer
	if err := u.Folder(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFolderPage(t *testing.T) {
	u := New("/_largo/ui/")
	mod := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	page := render(t, u, Folder{
		Name: "docs/<x>",
		Entries: []Entry{
			{Name: `<script>alert(1)</script>`, Size: 1536, Modified: mod},
			{Name: "a b:c", Dir: true, Modified: mod},
			{Name: `q"uote`, Size: 1, Modified: mod},
		},
		View:     View{Sort: SortSize, Desc: true},
		Archives: []string{"zip", "tar"},
		Upload:   &Upload{Endpoint: "/_largo/uploads/"},
		User:     `<b>eve</b>`,
		May:      []string{"read", "list", "write"},
		SignIn:   "/?login=%2Fdocs%2F",
	})
	for _, want := range []string{
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`href="./%3Cscript%3Ealert%281%29%3C/script%3E"`,
		`href="./a%20b:c/"`,
		`<td class="size">1.5 KiB</td>`,
		`<time datetime="2025-03-14T15:09:26Z">2025-03-14 15:09</time>`,
		`aria-current="page">&lt;x&gt;</a>`,
		`<a href="./../../">Home</a>`,
		`<a href="./../">docs</a>`,
		`<h1>/docs/&lt;x&gt;/</h1>`,
		`href="?archive=zip"`,
		`data-endpoint="/_largo/uploads/"`,
		`Signed in as <strong>&lt;b&gt;eve&lt;/b&gt;</strong><span class="may"> · here you may read, list and write</span>`,
		`data-folder="docs/&lt;x&gt;"`,
		`<th scope="col" class="size" aria-sort="descending"><a href="?order=asc&amp;sort=size"`,
		`<th scope="col" class="name"><a href="?order=asc&amp;sort=name"`,
		`<th scope="col" class="mod"><a href="?order=desc&amp;sort=modified"`,
		`1 folder, 2 files, 1.5 KiB`,
		`<a href="../" class="up-link">Parent folder</a>`,
		"/_largo/ui/" + u.Version() + "/app.js",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, absent := range []string{"<script>alert", `q"uote`, "<b>eve"} {
		if strings.Contains(page, absent) {
			t.Errorf("%s went into the page unescaped", absent)
		}
	}
	// A signed-in user is not offered to sign in, and no page asks for
	// a credential.
	for _, absent := range []string{"Sign in<", "login=", `type="password"`, "token"} {
		if strings.Contains(page, absent) {
			t.Errorf("page shows %q", absent)
		}
	}
	// Size, descending: the folder, then the larger file.
	if i, j := strings.Index(page, "a b:c/"), strings.Index(page, "1.5 KiB"); i < 0 || j < i {
		t.Error("rows not in the view's order")
	}
	checkPolicy(t, page)

	root := render(t, u, Folder{})
	for _, want := range []string{"This folder is empty.", "0 folders, 0 files, 0 B", `<a href="./" aria-current="page">Home</a>`} {
		if !strings.Contains(root, want) {
			t.Errorf("empty root page lacks %s", want)
		}
	}
	for _, absent := range []string{`id="upload"`, "Parent folder", "Download folder", "Signed in", "Sign in"} {
		if strings.Contains(root, absent) {
			t.Errorf("empty root page without uploads or archives shows %s", absent)
		}
	}
	// Through a share link to pub/docs, nothing above the link's folder
	// is offered: the breadcrumb starts at it, and it has no parent.
	shared := render(t, u, Folder{Name: "pub/docs/sub", Root: "pub/docs"})
	for _, want := range []string{`<a href="./../">docs</a>`, `aria-current="page">sub</a>`, `<a href="../" class="up-link">Parent folder</a>`} {
		if !strings.Contains(shared, want) {
			t.Errorf("page below a share link's folder lacks %s", want)
		}
	}
	for _, absent := range []string{"Home", "./../../", ">pub<"} {
		if strings.Contains(shared, absent) {
			t.Errorf("page below a share link's folder offers %s", absent)
		}
	}
	top := render(t, u, Folder{Name: "pub/docs", Root: "pub/docs"})
	if !strings.Contains(top, `<a href="./" aria-current="page">docs</a>`) || strings.Contains(top, "Parent folder") || strings.Contains(top, "Home") {
		t.Error("a share link's own folder offers a way above it")
	}
	filtered := render(t, u, Folder{Entries: []Entry{{Name: "a"}, {Name: "b"}}, View: View{Filter: "b"}})
	if !strings.Contains(filtered, "(1 of 2 shown)") || !strings.Contains(filtered, `value="b"`) {
		t.Error("filtered page lacks its count or its filter")
	}
	bucket := render(t, u, Folder{Entries: []Entry{{Name: "prefix", Dir: true}}})
	if !strings.Contains(bucket, `data-modified="" data-dir=""`) || !strings.Contains(bucket, `<td class="mod"></td>`) {
		t.Error("a folder without a time shows one")
	}
	anonymous := render(t, u, Folder{SignIn: "/?login=%2Fa%20b%2F"})
	if !strings.Contains(anonymous, `<p class="who"><a href="/?login=%2Fa%20b%2F">Sign in</a></p>`) || strings.Contains(anonymous, "Signed in") {
		t.Error("an anonymous visitor is not offered to sign in")
	}
	reader := render(t, u, Folder{User: "bob", May: []string{"list"}})
	if !strings.Contains(reader, `Signed in as <strong>bob</strong><span class="may"> · here you may list</span>`) {
		t.Error("a user's permissions are not shown")
	}
}

func TestSentence(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{"read"}, "read"},
		{[]string{"read", "list"}, "read and list"},
		{[]string{"read", "list", "write", "delete"}, "read, list, write and delete"},
	} {
		if got := sentence(c.words); got != c.want {
			t.Errorf("sentence(%q) = %q; want %q", c.words, got, c.want)
		}
	}
}

func TestVisible(t *testing.T) {
	for _, c := range []struct {
		v    Visible
		want string
	}{
		{Visible{Anonymous: true, SignedIn: true}, "everyone"},
		{Visible{Anonymous: true, SignedIn: true, Except: []string{"bob", "group:interns"}}, "everyone but bob and the group interns"},
		{Visible{SignedIn: true}, "every signed-in user"},
		{Visible{Names: []string{"alice", "carol", "group:admins"}}, "alice, carol and the group admins"},
		{Visible{Anonymous: true, Names: []string{"alice"}}, "visitors who are not signed in and alice"},
		{Visible{}, "no user (only through share links)"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%+v: %q; want %q", c.v, got, c.want)
		}
	}
	page := render(t, New("/_largo/ui/"), Folder{Name: "team", Visible: &Visible{Names: []string{"<b>al</b>"}}})
	if !strings.Contains(page, `<p class="visible" id="visible">Visible to &lt;b&gt;al&lt;/b&gt;</p>`) {
		t.Error("the page does not say who may see the folder, escaped")
	}
	if strings.Contains(render(t, New("/_largo/ui/"), Folder{Name: "team"}), "Visible to") {
		t.Error("a page told nothing says who may see the folder")
	}
}

// checkPolicy fails on anything the page's Content-Security-Policy would
// block: inline script, inline style, event handler attributes, resources
// from elsewhere.
func checkPolicy(t *testing.T, page string) {
	t.Helper()
	for _, re := range []string{
		`<script(?:\s[^>]*)?>[^<]`,             // inline script
		`<script(?:(?:\s+type="module")?\s*)>`, // a script without src
		`<style`,
		`\sstyle=`,
		`\son[a-z]+=`,
		`(?:src|href)="(?:https?:)?//`,
	} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("page has %q, which the policy blocks", m)
		}
	}
	// The page's script and style sheet carry its nonce; nothing else
	// does.
	if n := strings.Count(page, ` nonce="n0nce"`); n != 2 || strings.Count(page, "nonce=") != 2 {
		t.Errorf("%d elements carry the nonce; want the script and the style sheet", n)
	}
	policy := CSP("n0nce")
	for _, dir := range []string{"default-src 'none'; ", "; script-src 'nonce-n0nce'; ", "; style-src 'nonce-n0nce'; ", "; frame-ancestors 'none'", "; base-uri 'none'; "} {
		if !strings.Contains(policy, dir) {
			t.Errorf("policy lacks %s", dir)
		}
	}
	if strings.Contains(policy, "unsafe") || strings.Contains(policy, "strict-dynamic") || strings.Count(policy, "script-src") != 1 {
		t.Errorf("policy %s", policy)
	}
}

// TestNonce: a page needs one, and each is new.
func TestNonce(t *testing.T) {
	if err := New("/x/").Folder(io.Discard, Folder{}); err == nil {
		t.Error("a page rendered without a nonce")
	}
	seen := map[string]bool{}
	for range 1000 {
		n := Nonce()
		if len(n) != 22 || seen[n] || strings.Trim(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("nonce %q", n)
		}
		seen[n] = true
	}
}

func TestAssets(t *testing.T) {
	u := New("/_largo/ui/")
	serve := func(path string, hdr ...string) (*httptest.ResponseRecorder, error) {
		r := httptest.NewRequest("GET", path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		return w, u.Asset(w, r)
	}
	cur := "/_largo/ui/" + u.Version() + "/"
	for _, name := range []string{"app.js", "listing.js", "upload.js", "tus.js", "format.js", "largo.css", "icon.svg", "folder.svg", "file.svg", "up.svg"} {
		w, err := serve(cur + name)
		if err != nil || w.Code != 200 || w.Body.Len() == 0 {
			t.Errorf("%s: %d %v", name, w.Code, err)
			continue
		}
		if w.Header().Get("Cache-Control") != immutable || w.Header().Get("ETag") == "" {
			t.Errorf("%s: headers %v", name, w.Header())
		}
	}
	w, _ := serve(cur + "app.js")
	if ct := w.Header().Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
		t.Errorf("app.js Content-Type %q", ct)
	}
	plain := w.Body.String()

	// gzip for those who take it, with its own ETag.
	w, _ = serve(cur+"upload.js", "Accept-Encoding", "br, gzip;q=0.8")
	if w.Header().Get("Content-Encoding") != "gzip" || !strings.HasSuffix(w.Header().Get("ETag"), `-gzip"`) {
		t.Fatalf("gzip not chosen: %v", w.Header())
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if w2, _ := serve(cur + "upload.js"); string(unzipped) != w2.Body.String() {
		t.Error("gzipped upload.js differs")
	}
	if w, _ := serve(cur+"upload.js", "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" {
		t.Error("gzip sent to a client that refused it")
	}
	if w, _ := serve(cur+"upload.js", "Accept-Encoding", "gzip", "Range", "bytes=0-9"); w.Code != http.StatusPartialContent || w.Header().Get("Content-Encoding") != "" || w.Body.Len() != 10 {
		t.Errorf("range of an asset: %d %v", w.Code, w.Header())
	}

	// Revalidation.
	w, _ = serve(cur + "app.js")
	if w2, _ := serve(cur+"app.js", "If-None-Match", w.Header().Get("ETag")); w2.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", w2.Code)
	}
	// An older version's name: today's content, revalidated.
	w, err = serve("/_largo/ui/0123456789ab/app.js")
	if err != nil || w.Body.String() != plain || w.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("old version: %v %q", err, w.Header().Get("Cache-Control"))
	}
	for _, p := range []string{cur + "nope.js", cur, "/_largo/ui/app.js", "/elsewhere/app.js", cur + "../ui.go"} {
		if _, err := serve(p); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("%s: %v; want not found", p, err)
		}
	}
}

// TestScriptsHoldNoCredential: the page's scripts never handle a
// credential; the browser sends the one its user signed in with.
func TestScriptsHoldNoCredential(t *testing.T) {
	names, _ := fs.Glob(files, "assets/*.js")
	if len(names) == 0 {
		t.Fatal("no scripts")
	}
	for _, name := range names {
		b, _ := files.ReadFile(name)
		src := strings.ToLower(string(b))
		for _, word := range []string{"authorization", "token", "password", "withcredentials", "credentials:"} {
			if strings.Contains(src, word) {
				t.Errorf("%s mentions %q", name, word)
			}
		}
	}
}

func TestVersionFollowsContent(t *testing.T) {
	a, b := New("/x/"), New("/y/")
	if a.Version() != b.Version() || len(a.Version()) != 12 {
		t.Errorf("versions %q %q", a.Version(), b.Version())
	}
}

// TestNewReadsNoAsset checks that making a UI copies and hashes none of
// the embedded assets: a server that only sends files never asks for them.
func TestNewReadsNoAsset(t *testing.T) {
	if n := testing.AllocsPerRun(5, func() { New("/x/") }); n > 10 {
		t.Errorf("New makes %v allocations: it reads the assets", n)
	}
}

func FuzzParseView(f *testing.F) {
	f.Add("sort=size&order=desc&q=abc")
	f.Add("q=%ff%fe&sort=&order=")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		v := ParseView(q)
		switch v.Sort {
		case SortName, SortSize, SortModified:
		default:
			t.Fatalf("sort %q", v.Sort)
		}
		if len(v.Filter) > maxFilter {
			t.Fatalf("filter of %d bytes", len(v.Filter))
		}
		back, err := url.ParseQuery(strings.TrimPrefix(v.Query(), "?"))
		if err != nil {
			t.Fatal(err)
		}
		if again := ParseView(back); again != v {
			t.Fatalf("%+v read back as %+v", v, again)
		}
	})
}

// TestDeceptiveNamesShownEscaped: a name on disk that could pass for
// another is shown with its hidden characters written out, and linked by
// its own bytes; a page seen through a share link names its folder from
// the link's.
func TestDeceptiveNamesShownEscaped(t *testing.T) {
	u := New("/_largo/ui/")
	page := render(t, u, Folder{
		Name: "pub/films",
		Root: "pub",
		Entries: []Entry{
			{Name: "evil\u202etxt.exe", Size: 1},
			{Name: "zero\u200bwidth", Dir: true},
		},
	})
	for _, want := range []string{
		`evil\u{202E}txt.exe`,
		`href="./evil%E2%80%AEtxt.exe"`,
		`zero\u{200B}width`,
		`<h1>/films/</h1>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, absent := range []string{"evil\u202etxt", "/pub/films/"} {
		if strings.Contains(page, absent) {
			t.Errorf("page shows %q", absent)
		}
	}
}

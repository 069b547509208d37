package dav

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPropsNamed(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
	}{
		{``, 0},
		{`<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`, 0},
		{`<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><Z:a xmlns:Z="urn:z"/></D:prop></D:propfind>`, 2},
		{`<propfind xmlns="DAV:"><allprop/><include><a/><b/><c/></include></propfind>`, 3},
		{`<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:a xmlns:Z="urn:z"><x/><y/></Z:a><Z:b xmlns:Z="urn:z">1</Z:b></D:prop></D:set><D:remove><D:prop><Z:c xmlns:Z="urn:z"/></D:prop></D:remove></D:propertyupdate>`, 3},
		// A DAV:prop inside a property's value holds no properties.
		{`<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:a xmlns:Z="urn:z"><D:prop><i/><j/></D:prop></Z:a></D:prop></D:set></D:propertyupdate>`, 1},
		// Another namespace's prop holds none either.
		{`<D:propfind xmlns:D="DAV:" xmlns:Z="urn:z"><Z:prop><a/><b/></Z:prop></D:propfind>`, 0},
		// Counted up to the first malformed token.
		{`<D:propfind xmlns:D="DAV:"><D:prop><a/><b></D:prop>`, 2},
		{manyProps(20000), MaxRequestProps + 1},
	} {
		if got := propsNamed([]byte(tc.body), MaxRequestProps); got != tc.want {
			t.Errorf("propsNamed(%.80q) = %d; want %d", tc.body, got, tc.want)
		}
	}
}

func FuzzPropsNamed(f *testing.F) {
	f.Add([]byte(`<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>`))
	f.Add([]byte(manyProps(3)))
	f.Fuzz(func(t *testing.T, body []byte) {
		if n := propsNamed(body, 10); n < 0 || n > 11 {
			t.Errorf("propsNamed = %d; want 0 to 11", n)
		}
	})
}

func TestLockOwner(t *testing.T) {
	for _, tc := range []struct {
		body, want string
		ok         bool
	}{
		{`<D:lockinfo xmlns:D="DAV:"><D:owner><D:href>http://x/a&amp;b</D:href></D:owner></D:lockinfo>`, `<href xmlns="DAV:">http://x/a&amp;b</href>`, true},
		{`<lockinfo xmlns="DAV:"><owner>me</owner></lockinfo>`, `me`, true},
		{`<a:lockinfo xmlns:a="DAV:" xmlns:z="urn:z"><a:owner><z:who xmlns:q="urn:q">bob</z:who></a:owner></a:lockinfo>`, `<who xmlns="urn:z">bob</who>`, true},
		{`<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope></D:lockinfo>`, ``, false},
		{`<D:lockinfo xmlns:D="DAV:"><D:owner>cut`, ``, false},
	} {
		got, ok := lockOwner([]byte(tc.body))
		if got != tc.want || ok != tc.ok {
			t.Errorf("lockOwner(%q) = %q, %v; want %q, %v", tc.body, got, ok, tc.want, tc.ok)
		}
		if ok {
			// It stands on its own.
			var v struct {
				Inner string `xml:",innerxml"`
			}
			if err := xml.Unmarshal([]byte("<o>"+got+"</o>"), &v); err != nil {
				t.Errorf("lockOwner(%q) = %q: %v", tc.body, got, err)
			}
		}
	}
}

// propfindNaming is a PROPFIND body that names n properties.
func propfindNaming(n int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>`)
	for i := range n {
		fmt.Fprintf(&b, `<Z:p%d xmlns:Z="urn:x"/>`, i)
	}
	b.WriteString(`</D:prop></D:propfind>`)
	return b.String()
}

// TestPropsBounded: a PROPFIND or PROPPATCH that names more than
// MaxRequestProps properties is refused whole (413) before the library
// reads it, one over MaxBody too; one file's dead properties stop at
// MaxFileProps (507 for the PROPPATCH past it, which changes nothing).
func TestPropsBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _, _ := newServer(t, dir)
	for _, tc := range []struct {
		what, method, body string
		code               int
		reason             string
	}{
		{"PROPPATCH of 20,000", "PROPPATCH", manyProps(20000), 413, "too many properties"},
		{"PROPPATCH of one too many", "PROPPATCH", manyProps(MaxRequestProps + 1), 413, "too many properties"},
		{"PROPFIND of one too many", "PROPFIND", propfindNaming(MaxRequestProps + 1), 413, "too many properties"},
		{"PROPFIND over MaxBody", "PROPFIND", propfindNaming(1) + strings.Repeat(" ", MaxBody), 413, "request body too large"},
		{"PROPFIND of the most", "PROPFIND", propfindNaming(MaxRequestProps), 207, ""},
	} {
		code, body := do(t, tc.method, srv.URL+"/f.txt", tc.body, "Depth", "0")
		if code != tc.code || !strings.Contains(body, tc.reason) {
			t.Errorf("%s: %d %.200q; want %d %q", tc.what, code, body, tc.code, tc.reason)
		}
	}
	for i := range MaxFileProps / MaxRequestProps {
		body := strings.ReplaceAll(manyProps(MaxRequestProps), "<Z:p", fmt.Sprintf("<Z:r%d", i))
		body = strings.ReplaceAll(body, "</Z:p", fmt.Sprintf("</Z:r%d", i))
		if code, answer := do(t, "PROPPATCH", srv.URL+"/f.txt", body); code != 207 || !strings.Contains(answer, "200 OK") {
			t.Fatalf("PROPPATCH %d of %d properties: %d %.200s", i, MaxRequestProps, code, answer)
		}
	}
	code, answer := do(t, "PROPPATCH", srv.URL+"/f.txt", strings.ReplaceAll(manyProps(1), "Z:p", "Z:last"))
	if code != 207 || !strings.Contains(answer, "507 Insufficient Storage") || !strings.Contains(answer, "dead properties over") {
		t.Errorf("PROPPATCH past MaxFileProps: %d %.600s; want 207 with 507 and the bound's reason", code, answer)
	}
	_, found := do(t, "PROPFIND", srv.URL+"/f.txt", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`, "Depth", "0")
	if n := strings.Count(found, `xmlns="urn:x"`); n != MaxFileProps || strings.Contains(found, "<last ") {
		t.Errorf("%d dead properties recorded, last one among them: %v; want %d, not it", n, strings.Contains(found, "<last "), MaxFileProps)
	}
}

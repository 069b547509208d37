package dav

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// multistatus is what the tests read of a PROPFIND's answer.
type multistatus struct {
	Responses []struct {
		Href     string `xml:"href"`
		Propstat []struct {
			Status string `xml:"status"`
			Prop   struct {
				LockDiscovery *struct {
					Active []activeLock `xml:"activelock"`
				} `xml:"DAV: lockdiscovery"`
			} `xml:"prop"`
		} `xml:"propstat"`
	} `xml:"response"`
}

type activeLock struct {
	Depth   string `xml:"depth"`
	Timeout string `xml:"timeout"`
	Owner   *struct {
		Inner string `xml:",innerxml"`
	} `xml:"owner"`
	Token string `xml:"locktoken>href"`
	Root  string `xml:"lockroot>href"`
}

// discovered returns the lockdiscovery of each href of a PROPFIND's
// answer; a href whose property was not found is missing.
func discovered(t *testing.T, body string) map[string][]activeLock {
	t.Helper()
	var ms multistatus
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	out := map[string][]activeLock{}
	for _, r := range ms.Responses {
		for _, ps := range r.Propstat {
			if ld := ps.Prop.LockDiscovery; ld != nil && strings.Contains(ps.Status, " 200 ") {
				out[r.Href] = ld.Active
			}
		}
	}
	return out
}

const findLocks = `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/><D:supportedlock/></D:prop></D:propfind>`

// TestLockDiscovery: a PROPFIND answers DAV:lockdiscovery with the locks
// that apply (RFC 4918, 15.8): a file's own and its folder's of Depth
// infinity, with depth, timeout, owner and root, the token to its holder
// alone; empty where nothing is locked, in a listing of Depth 1 too.
func TestLockDiscovery(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.txt", "box/b.txt", "box/c.txt", "free.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, _, _ := newServer(t, dir)
	if code, body := do(t, "PROPFIND", srv.URL+"/a.txt", findLocks, "Depth", "0"); code != 207 || len(discovered(t, body)["/a.txt"]) != 0 || !strings.Contains(body, "<D:lockdiscovery></D:lockdiscovery>") {
		t.Errorf("lockdiscovery of a file no one locked: %d\n%s\nwant it found, empty", code, body)
	}
	owner := `<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>mailto:alice@example.org</D:href></D:owner></D:lockinfo>`
	resp := send(t, newRequest(t, "LOCK", srv.URL+"/a.txt", owner, "Depth", "0", "Timeout", "Second-600", userHeader, "alice"))
	tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	resp = send(t, newRequest(t, "LOCK", srv.URL+"/box", lockBody, "Timeout", "Second-60", userHeader, "alice"))
	boxTok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	if tok == "" || boxTok == "" {
		t.Fatalf("LOCK: %d %s", resp.StatusCode, resp.text)
	}

	for _, user := range []string{"alice", "bob"} {
		code, body := do(t, "PROPFIND", srv.URL+"/a.txt", findLocks, "Depth", "0", userHeader, user)
		got := discovered(t, body)["/a.txt"]
		if code != 207 || len(got) != 1 {
			t.Fatalf("PROPFIND as %s: %d, %d active locks\n%s", user, code, len(got), body)
		}
		l := got[0]
		if l.Depth != "0" || l.Root != "/a.txt" || l.Timeout != "Second-600" || l.Owner == nil || !strings.Contains(l.Owner.Inner, "mailto:alice@example.org") {
			t.Errorf("as %s: %+v", user, l)
		}
		if want := map[string]string{"alice": tok, "bob": ""}[user]; l.Token != want {
			t.Errorf("as %s: the token shown is %q; want %q", user, l.Token, want)
		}
	}

	code, body := do(t, "PROPFIND", srv.URL+"/", findLocks, "Depth", "1", userHeader, "alice")
	got := discovered(t, body)
	if code != 207 || len(got) != 4 {
		t.Fatalf("PROPFIND of Depth 1: %d, lockdiscovery of %d entries; want 4\n%s", code, len(got), body)
	}
	if len(got["/a.txt"]) != 1 || got["/a.txt"][0].Token != tok || len(got["/free.txt"]) != 0 || len(got["/"]) != 0 {
		t.Errorf("PROPFIND of Depth 1: %+v", got)
	}
	if b := got["/box/"]; len(b) != 1 || b[0].Depth != "infinity" || b[0].Token != boxTok || b[0].Root != "/box" {
		t.Errorf("the folder's lock: %+v", b)
	}
	code, body = do(t, "PROPFIND", srv.URL+"/box/", findLocks, "Depth", "1", userHeader, "alice")
	got = discovered(t, body)
	for _, href := range []string{"/box/", "/box/b.txt", "/box/c.txt"} {
		if b := got[href]; code != 207 || len(b) != 1 || b[0].Token != boxTok || b[0].Root != "/box" {
			t.Errorf("%s below the folder's lock: %d %+v", href, code, b)
		}
	}

	if code, _ := do(t, "UNLOCK", srv.URL+"/a.txt", "", "Lock-Token", "<"+tok+">", userHeader, "alice"); code != 204 {
		t.Fatalf("UNLOCK: %d", code)
	}
	if _, body := do(t, "PROPFIND", srv.URL+"/a.txt", findLocks, "Depth", "0"); len(discovered(t, body)["/a.txt"]) != 0 {
		t.Errorf("lockdiscovery after UNLOCK:\n%s", body)
	}
	// Never recorded as a dead property, even copied.
	if code, _ := do(t, "COPY", srv.URL+"/box/b.txt", "", "Destination", "/copied.txt", "If", "(<"+boxTok+">)", userHeader, "alice"); code != 201 {
		t.Fatalf("COPY: %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, ".largo", "dav", "props")); err == nil {
		ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "dav", "props"))
		t.Errorf("property records after a COPY of a locked file: %d", len(ents))
	}
}

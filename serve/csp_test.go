package serve

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestPagePolicy reads a folder page's Content-Security-Policy as a
// browser would and asks it which scripts may run: the page's own, and no
// other; above all not a .js file a user uploaded (same origin, a path
// users can write), nor one carrying another response's nonce. The page's
// style sheet is held to the same rule.
func TestPagePolicy(t *testing.T) {
	h, _, _ := newWriteHandler(t, map[string]string{"docs/a.txt": "a"}, Config{Resumable: http.NotFoundHandler()})
	put := httptest.NewRequest("PUT", "/evil.js", strings.NewReader("alert(document.domain)"))
	put.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, put)
	if rec.Code != http.StatusCreated {
		t.Fatalf("PUT /evil.js: %d", rec.Code)
	}

	page := func() (policy, script, style, nonce string) {
		rec := do(h, "GET", "/docs/")
		body := rec.Body.String()
		m := regexp.MustCompile(`<script type="module" src="([^"]+)" nonce="([^"]+)"></script>`).FindStringSubmatch(body)
		css := regexp.MustCompile(`<link rel="stylesheet" href="([^"]+)" nonce="([^"]+)">`).FindStringSubmatch(body)
		if m == nil || css == nil || css[2] != m[2] {
			t.Fatalf("no script and style sheet with one nonce in the page:\n%s", body)
		}
		return rec.Header().Get("Content-Security-Policy"), m[1], css[1], m[2]
	}
	policy, script, style, nonce := page()
	policy2, _, _, nonce2 := page()
	if nonce == nonce2 || policy == policy2 || len(nonce) < 22 {
		t.Errorf("nonces %q and %q: want a new one, of 128 bits, for each response", nonce, nonce2)
	}
	if rec := do(h, "HEAD", "/docs/"); !strings.Contains(rec.Header().Get("Content-Security-Policy"), "'nonce-") {
		t.Errorf("HEAD: policy %q", rec.Header().Get("Content-Security-Policy"))
	}

	const origin = "http://127.0.0.1:8080"
	pageURL := origin + "/docs/"
	for _, c := range []struct {
		what, directive, url, nonce string
		want                        bool
	}{
		{"the page's script", "script-src", origin + script, nonce, true},
		{"the page's style sheet", "style-src", origin + style, nonce, true},
		{"an uploaded script", "script-src", origin + "/evil.js", "", false},
		{"an uploaded script with another page's nonce", "script-src", origin + "/evil.js", nonce2, false},
		{"an uploaded script beside the page", "script-src", origin + "/docs/evil.js", "", false},
		{"the page's script without the nonce", "script-src", origin + script, "", false},
		{"a script from elsewhere", "script-src", "https://cdn.example/x.js", "", false},
		{"an uploaded style sheet", "style-src", origin + "/evil.css", "", false},
	} {
		if got := cspAllows(t, policy, c.directive, pageURL, c.url, c.nonce); got != c.want {
			t.Errorf("%s (%s): allowed %v; want %v\npolicy: %s", c.what, c.url, got, c.want, policy)
		}
	}
	for _, src := range []string{"'self'", "'unsafe", "'strict-dynamic'", "*", "http:", "https:", "data:", "blob:"} {
		for _, d := range []string{"script-src", "style-src"} {
			if anyPrefix(cspDirectives(policy)[d], src) {
				t.Errorf("%s allows %s", d, src)
			}
		}
	}
	// What a browser would load as the page's script is an asset of this
	// server, and the uploaded file is sent so that it never runs here.
	if rec := do(h, "GET", script); rec.Code != 200 || !strings.HasPrefix(script, UIPrefix) {
		t.Errorf("GET %s: %d", script, rec.Code)
	}
	if rec := do(h, "GET", "/evil.js"); rec.Header().Get("Content-Security-Policy") != "sandbox" {
		t.Errorf("/evil.js served with policy %q", rec.Header().Get("Content-Security-Policy"))
	}
}

// anyPrefix reports whether one of values starts with prefix.
func anyPrefix(values []string, prefix string) bool {
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}

// cspDirectives splits a policy (one policy, no commas) into its
// directives' source lists, by lower-case name; the first of a repeated
// directive counts, as in browsers.
func cspDirectives(policy string) map[string][]string {
	ds := map[string][]string{}
	for part := range strings.SplitSeq(policy, ";") {
		f := strings.Fields(part)
		if len(f) == 0 {
			continue
		}
		name := strings.ToLower(f[0])
		if _, seen := ds[name]; !seen {
			ds[name] = f[1:]
		}
	}
	return ds
}

// cspAllows reports whether a policy lets an element of the page at
// pageURL, carrying nonce ("" for none), load rawURL as a script
// (directive "script-src") or a style sheet ("style-src"): CSP Level 3's
// source-list matching for a parser-inserted element, enough of it to
// judge largo's policies ('none', 'self', nonces, 'strict-dynamic',
// schemes, hosts with ports and paths, wildcards).
func cspAllows(t *testing.T, policy, directive, pageURL, rawURL, nonce string) bool {
	t.Helper()
	if strings.Contains(policy, ",") {
		t.Fatalf("several policies in one header: %s", policy)
	}
	ds := cspDirectives(policy)
	list, ok := ds[directive+"-elem"]
	if !ok {
		list, ok = ds[directive]
	}
	if !ok {
		list, ok = ds["default-src"]
	}
	if !ok {
		return true
	}
	page, err1 := url.Parse(pageURL)
	u, err2 := url.Parse(rawURL)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	strict := directive == "script-src" && anyPrefix(list, "'strict-dynamic'")
	for _, src := range list {
		lower := strings.ToLower(src)
		switch {
		case strings.HasPrefix(src, "'nonce-"):
			if nonce != "" && src == "'nonce-"+nonce+"'" {
				return true
			}
		case strict || strings.HasPrefix(src, "'"):
			// 'strict-dynamic' ignores every source but nonces and
			// hashes for parser-inserted elements; 'none', hashes and
			// 'unsafe-…' allow no external element without a nonce.
			if lower == "'self'" && !strict && sameOrigin(page, u) {
				return true
			}
		case strings.HasSuffix(src, ":") && !strings.Contains(src, "/"):
			if schemeMatches(strings.TrimSuffix(lower, ":"), u.Scheme) {
				return true
			}
		default:
			if hostSourceMatches(lower, page, u) {
				return true
			}
		}
	}
	return false
}

func sameOrigin(a, b *url.URL) bool {
	return schemeMatches(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// schemeMatches: a source's scheme allows itself and its secure upgrade.
func schemeMatches(src, scheme string) bool {
	return src == scheme || src == "http" && scheme == "https" || src == "ws" && (scheme == "wss" || scheme == "http" || scheme == "https")
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return map[string]string{"http": "80", "https": "443"}[u.Scheme]
}

// hostSourceMatches matches [scheme://]host[:port][/path].
func hostSourceMatches(src string, page, u *url.URL) bool {
	if src == "*" {
		return u.Scheme == "http" || u.Scheme == "https" || u.Scheme == page.Scheme
	}
	scheme := page.Scheme
	if s, rest, ok := strings.Cut(src, "://"); ok {
		scheme, src = s, rest
	}
	if !schemeMatches(scheme, u.Scheme) {
		return false
	}
	hostPort, path := src, ""
	if i := strings.IndexByte(src, '/'); i >= 0 {
		hostPort, path = src[:i], src[i:]
	}
	host, p, hasPort := strings.Cut(hostPort, ":")
	switch {
	case host == "*":
	case strings.HasPrefix(host, "*."):
		if !strings.HasSuffix(strings.ToLower(u.Hostname()), host[1:]) {
			return false
		}
	case !strings.EqualFold(host, u.Hostname()):
		return false
	}
	switch {
	case hasPort && p == "*":
	case hasPort && p != port(u):
		return false
	case !hasPort && port(u) != map[string]string{"http": "80", "https": "443"}[u.Scheme]:
		return false
	}
	if path == "" {
		return true
	}
	if strings.HasSuffix(path, "/") {
		return strings.HasPrefix(u.Path, path)
	}
	return u.Path == path
}

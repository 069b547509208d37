package pageapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/auth"
	"largo/links"
)

// loginFixture serves a folder under a policy with a password user (carol,
// whose hash is made once per test binary) and the token users of
// accessFile.
func loginFixture(t *testing.T) http.Handler {
	t.Helper()
	policy := accessFile + "\n[[user]]\nname = \"carol\"\npassword = \"" + carolHash() + "\"\n"
	return newFixture(t, map[string]string{"docs/a.txt": "a", "a b/c.txt": "c"}, setup{policy: policy}).h
}

var carolHash = sync.OnceValue(func() string { return auth.HashPassword("carol's password") })

// login sends GET path?login=value with the given Authorization ("" for
// none).
func login(h http.Handler, method, path, value, authz string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path+"?"+url.Values{"login": {value}}.Encode(), nil)
	req.Host = "127.0.0.1"
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func basic(user, pass string) string {
	req := httptest.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return req.Header.Get("Authorization")
}

// TestLogin: ?login answers 401 with a Basic challenge until the request
// carries a user's credential, then 303 to the folder it names.
func TestLogin(t *testing.T) {
	h := loginFixture(t)
	carol := basic("carol", "carol's password")

	rec := login(h, "GET", "/", "/docs/", "")
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("Location") != "" {
		t.Fatalf("anonymous: %d %v", rec.Code, rec.Header())
	}
	if !hasBasicChallenge(rec.Header()) || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("anonymous: challenge %q, Cache-Control %q", rec.Header().Values("WWW-Authenticate"), rec.Header().Get("Cache-Control"))
	}
	for _, c := range []struct {
		what, method, path, value, authz, want string
	}{
		{"password", "GET", "/", "/docs/", carol, "/docs/"},
		{"HEAD", "HEAD", "/", "/docs/", carol, "/docs/"},
		{"the root", "GET", "/", "/", carol, "/"},
		{"a token as the password, any name", "GET", "/", "/docs/", basic("whoever", "alice-token-0123456789"), "/docs/"},
		{"a bearer token", "GET", "/", "/docs/", "Bearer bob-token-0123456789", "/docs/"},
		{"no value: the folder itself", "GET", "/docs/", "", carol, "/docs/"},
		{"escaped", "GET", "/", "/a b/", carol, "/a%20b/"},
		{"a file", "GET", "/", "/docs/a.txt", carol, "/docs/a.txt"},
		{"a query character stays in the path", "GET", "/", "/docs?x=1", carol, "/docs%3Fx=1"},
	} {
		rec := login(h, c.method, c.path, c.value, c.authz)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != c.want || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d Location %q; want 303 to %q", c.what, rec.Code, rec.Header().Get("Location"), c.want)
		}
	}
	// A wrong credential is asked again, like any other.
	for _, authz := range []string{basic("carol", "wrong"), basic("carol", ""), "Bearer wrong-token-0123456789"} {
		if rec := login(h, "GET", "/", "/docs/", authz); rec.Code != http.StatusUnauthorized || rec.Header().Get("Location") != "" {
			t.Errorf("%q: %d %q", authz, rec.Code, rec.Header().Get("Location"))
		}
	}
	// The login is only for folders: a file is served as it is.
	if rec := login(h, "GET", "/docs/a.txt", "/", ""); rec.Code != 200 || rec.Body.String() != "a" {
		t.Errorf("a file with ?login: %d", rec.Code)
	}
}

func hasBasicChallenge(h http.Header) bool {
	for _, v := range h.Values("WWW-Authenticate") {
		if strings.HasPrefix(v, `Basic realm="`+auth.Realm+`"`) {
			return true
		}
	}
	return false
}

// TestLoginOpenRedirect: a target that is not a path of this server is
// refused, before any credential is asked for, and nothing is redirected.
func TestLoginOpenRedirect(t *testing.T) {
	h := loginFixture(t)
	for _, value := range []string{
		"https://evil.example/",
		"//evil.example/",
		"///evil.example/",
		"/\\evil.example/",
		"\\\\evil.example/",
		"/\t/evil.example/",
		"/\n/evil.example/",
		"evil.example",
		"javascript:alert(1)",
		"http:/evil.example",
		"/../evil",
		"/./docs/",
		"/docs//",
	} {
		for _, authz := range []string{"", basic("carol", "carol's password")} {
			rec := login(h, "GET", "/", value, authz)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" || rec.Header().Get("WWW-Authenticate") != "" {
				t.Errorf("%q (signed in: %v): %d Location %q", value, authz != "", rec.Code, rec.Header().Get("Location"))
			}
		}
	}
}

// TestLoginWithoutUsers: where no one can sign in, ?login says so rather
// than asking for a password that nothing accepts; a share link does not
// sign in either.
func TestLoginWithoutUsers(t *testing.T) {
	plain := newFixture(t, map[string]string{"docs/a.txt": "a"}, setup{}).h
	open := newFixture(t, nil, setup{writes: true, uploads: true}).h
	for what, h := range map[string]http.Handler{"no policy": plain, "open uploads": open} {
		if rec := login(h, "GET", "/", "/", ""); rec.Code != http.StatusNotFound || rec.Header().Get("WWW-Authenticate") != "" {
			t.Errorf("%s: %d %v", what, rec.Code, rec.Header())
		}
	}
	f := newAccessFixture(t)
	path := f.link(t, links.Link{Kind: links.Folder, Path: "pub", Expires: f.now.Add(time.Hour)}, "")
	if rec := login(f.h, "GET", path, "/", ""); rec.Code != http.StatusForbidden || rec.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("share link: %d %v", rec.Code, rec.Header())
	}
}

func FuzzLoginTarget(f *testing.F) {
	for _, s := range []string{"/", "/docs/", "//evil", "/\\evil", "https://evil/", "/a b/?c#d", "/%2F%2Fevil", "/:x/"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://largo.test/here/")
	f.Fuzz(func(t *testing.T, value string) {
		target, err := loginTarget(value, "/self/")
		if err != nil {
			return
		}
		if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") || strings.ContainsAny(target, "\\?#") {
			t.Fatalf("%q: target %q", value, target)
		}
		u, err := base.Parse(target)
		if err != nil || u.Host != base.Host || u.Scheme != base.Scheme {
			t.Fatalf("%q: target %q resolves to %v (%v)", value, target, u, err)
		}
	})
}

// logout sends GET path?logout=value with the given Authorization.
func logout(h http.Handler, path, value, authz string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path+"?"+url.Values{"logout": {value}}.Encode(), nil)
	req.Host = "127.0.0.1"
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestLogout: ?logout answers a request with the browser's credential
// 401 with no challenge a browser answers by asking (so it forgets the
// credential and asks for none), and a page that goes on; one without
// a credential, 303 on; a target elsewhere is refused.
func TestLogout(t *testing.T) {
	h := loginFixture(t)
	carol := basic("carol", "carol's password")
	rec := logout(h, "/", "/docs/", carol)
	if rec.Code != http.StatusUnauthorized || hasBasicChallenge(rec.Header()) || rec.Header().Get("WWW-Authenticate") == "" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("signed in: %d %v", rec.Code, rec.Header())
	}
	if body := rec.Body.String(); !strings.Contains(body, `<a href="/docs/">Go on</a>`) || !strings.Contains(body, "<h1>Signed out</h1>") {
		t.Errorf("the page after signing out:\n%s", body)
	}
	if rec := logout(h, "/", "/docs/", ""); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/docs/" {
		t.Errorf("signed out already: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	for _, value := range []string{"https://evil.example/", "//evil.example/"} {
		if rec := logout(h, "/", value, carol); rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
			t.Errorf("%q: %d", value, rec.Code)
		}
	}
	f := newAccessFixture(t)
	path := f.link(t, links.Link{Kind: links.Folder, Path: "pub", Expires: f.now.Add(time.Hour)}, "")
	if rec := logout(f.h, path, "/", ""); rec.Code != http.StatusForbidden {
		t.Errorf("share link: %d", rec.Code)
	}
}

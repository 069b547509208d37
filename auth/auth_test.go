package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOneUser: the --token policy takes the token as a bearer token or as
// the password of basic auth under any name, and nothing else.
func TestOneUser(t *testing.T) {
	a := New(OneUser("s3cret-token-0123", false), nil)
	for _, tt := range []struct {
		name string
		set  func(r *http.Request)
		want bool
	}{
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token-0123") }, true},
		{"bearer lower case", func(r *http.Request) { r.Header.Set("Authorization", "bearer s3cret-token-0123") }, true},
		{"bearer wrong", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token-012") }, false},
		{"bearer longer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token-01234") }, false},
		{"bearer empty", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, false},
		{"basic password", func(r *http.Request) { r.SetBasicAuth("anyone", "s3cret-token-0123") }, true},
		{"basic no user", func(r *http.Request) { r.SetBasicAuth("", "s3cret-token-0123") }, true},
		{"basic token as user", func(r *http.Request) { r.SetBasicAuth("s3cret-token-0123", "") }, false},
		{"basic wrong", func(r *http.Request) { r.SetBasicAuth("u", "nope") }, false},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Token s3cret-token-0123") }, false},
	} {
		r := httptest.NewRequest("PUT", "/f", nil)
		tt.set(r)
		user, err := a.Identify(r)
		got := err == nil && a.Policy().Allowed(user, "f")&Write != 0
		if got != tt.want {
			t.Errorf("%s: may write = %v (%q, %v)", tt.name, got, user, err)
		}
	}
	if p := OneUser("", false); p.Allowed("", "f") != Read|List || p.Allowed("", "f")&Write != 0 || !p.ReadsAll("") {
		t.Error("without a token, anyone may write, or not read all")
	}
	if p := OneUser("", false); p.Users() != 0 {
		t.Error("users without a token")
	} else if user, err := New(p, nil).Identify(httptest.NewRequest("GET", "/", nil)); user != "" || err != nil {
		t.Errorf("no users: %q, %v", user, err)
	}
	if p := OneUser("", true); p.Allowed("", "a/b") != All {
		t.Error("open: not everyone may write")
	}
}

func TestChallengeAndGenerate(t *testing.T) {
	h := http.Header{}
	r := httptest.NewRequest("PUT", "/f", nil)
	Challenge(h, r)
	if v := h.Values("WWW-Authenticate"); len(v) != 2 {
		t.Fatalf("challenges %q", v)
	}
	// A refused bearer token: no Basic challenge, which would make a
	// browser open its password dialog over the page that sent it.
	h = http.Header{}
	r.Header.Set("Authorization", "Bearer wrong")
	Challenge(h, r)
	if v := h.Values("WWW-Authenticate"); len(v) != 1 || v[0] != `Bearer realm="largo", error="invalid_token"` {
		t.Fatalf("challenges to a bearer token %q", v)
	}
	a, b := Generate(), Generate()
	if a == b || len(a) < 40 {
		t.Fatalf("tokens %q, %q", a, b)
	}
}

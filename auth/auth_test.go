package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAllow(t *testing.T) {
	tok := NewToken("s3cret")
	for _, tt := range []struct {
		name string
		set  func(r *http.Request)
		want bool
	}{
		{"none", func(*http.Request) {}, false},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }, true},
		{"bearer lower case", func(r *http.Request) { r.Header.Set("Authorization", "bearer s3cret") }, true},
		{"bearer wrong", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cre") }, false},
		{"bearer longer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cretx") }, false},
		{"bearer empty", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, false},
		{"basic password", func(r *http.Request) { r.SetBasicAuth("anyone", "s3cret") }, true},
		{"basic no user", func(r *http.Request) { r.SetBasicAuth("", "s3cret") }, true},
		{"basic token as user", func(r *http.Request) { r.SetBasicAuth("s3cret", "") }, false},
		{"basic wrong", func(r *http.Request) { r.SetBasicAuth("u", "nope") }, false},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Token s3cret") }, false},
	} {
		r := httptest.NewRequest("PUT", "/f", nil)
		tt.set(r)
		if got := tok.Allow(r); got != tt.want {
			t.Errorf("%s: Allow = %v", tt.name, got)
		}
	}
	r := httptest.NewRequest("PUT", "/f", nil)
	r.Header.Set("Authorization", "Bearer ")
	if NewToken("").Allow(r) || (*Token)(nil).Allow(r) || (&Token{}).Allow(r) {
		t.Error("an empty token accepted a request")
	}
}

func TestChallengeAndGenerate(t *testing.T) {
	h := http.Header{}
	Challenge(h)
	if v := h.Values("WWW-Authenticate"); len(v) != 2 {
		t.Fatalf("challenges %q", v)
	}
	a, b := Generate(), Generate()
	if a == b || len(a) < 40 {
		t.Fatalf("tokens %q, %q", a, b)
	}
}

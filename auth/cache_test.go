package auth

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSignInCacheAtCap: past the bound of the sign-ins kept in memory,
// the most recent ones are still kept (the least recently used went, not
// everything at once): they pass without their password being checked
// again, while the oldest one is checked again.
func TestSignInCacheAtCap(t *testing.T) {
	const n = cacheMax + 100
	var text strings.Builder
	for i := range n {
		fmt.Fprintf(&text, "[[user]]\nname = \"u%d\"\npassword = %q\n\n", i, cheapHash(fmt.Sprint("pw", i)))
	}
	text.WriteString("[[rule]]\npath = \"/\"\nusers = [\"*\"]\nallow = [\"read\"]\n")
	p, err := loadText(t, text.String())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	a := New(p, func() time.Time { return now })
	signIn := func(i int) (string, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = fmt.Sprintf("10.%d.%d.1:1234", i>>8, i&0xff) // failures counted apart
		r.SetBasicAuth(fmt.Sprint("u", i), fmt.Sprint("pw", i))
		return a.Identify(r)
	}
	for i := range n {
		if _, err := signIn(i); err != nil {
			t.Fatalf("u%d: %v", i, err)
		}
	}
	// Every password changes without a reload: only a sign-in kept in
	// memory still passes with the old one.
	changed, err := parseHash(cheapHash("changed"))
	if err != nil {
		t.Fatal(err)
	}
	users := a.Policy().users
	for name, u := range users {
		u.password = &changed
		users[name] = u
	}
	failed := 0
	for i := n - cacheMax; i < n; i++ {
		if _, err := signIn(i); err != nil {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of the %d most recent sign-ins were forgotten", failed, cacheMax)
	}
	if _, err := signIn(0); !errors.Is(err, ErrBadCredential) {
		t.Errorf("the oldest sign-in, past the bound: %v; want it checked again (ErrBadCredential)", err)
	}
}

// TestMembershipsAtCap: past the bound of the users whose groups a proxy
// named, those seen longest ago are forgotten, one per new user, and the
// others kept.
func TestMembershipsAtCap(t *testing.T) {
	ms := newMemberships()
	ms.told.Store(true)
	const over = 10
	for i := range maxMembers + over {
		ms.set(fmt.Sprint("u", i), []string{"g"}, false)
	}
	for i := range maxMembers + over {
		_, known := ms.of(fmt.Sprint("u", i))
		if want := i >= over; known != want {
			t.Fatalf("u%d: known %v; want %v", i, known, want)
		}
	}
}

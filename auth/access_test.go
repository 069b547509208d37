package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// cheapHash is an argon2id hash with the smallest costs, so tests stay
// quick.
func cheapHash(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, 1, 8, 1, 32)
	b := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=19$m=8,t=1,p=1$%s$%s", b.EncodeToString(salt), b.EncodeToString(key))
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const tokenBob = "bob-token-0123456789"

func testPolicy(t *testing.T) *Policy {
	t.Helper()
	bc, _ := bcrypt.GenerateFromPassword([]byte("carol-pw"), bcrypt.MinCost)
	p, err := LoadFile(writeFile(t, fmt.Sprintf(`
[[user]]
name = "alice"
password = %q

[[user]]
name = "bob"
tokens = [%q]

[[user]]
name = "carol"
password = %q
tokens = ["carol-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["*"]
allow = []

[[rule]]
path = "/private"
users = ["alice"]
allow = ["all"]

[[rule]]
path = "/drop"
users = ["anonymous"]
allow = ["write"]

[[rule]]
path = "/bob/"
users = ["bob"]
allow = ["read", "write"]
`, cheapHash("alice-pw"), tokenBob, bc)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRules(t *testing.T) {
	p := testPolicy(t)
	for _, tt := range []struct {
		user, name string
		want       Perm
	}{
		{"", "", Read | List},
		{"", "a/b.txt", Read | List},
		{"", "private", 0},
		{"", "private/x", 0},
		{"", "privatex", Read | List}, // a prefix of elements, not of bytes
		{"alice", "private/x", All},
		{"bob", "private/x", 0},
		{"", "drop/in.txt", Write},
		{"alice", "drop/in.txt", Read | List}, // the anonymous rule is not alice's
		{"bob", "bob/f", Read | Write},
		{"bob", "bobby", Read | List},
	} {
		if got := p.Allowed(tt.user, tt.name); got != tt.want {
			t.Errorf("Allowed(%q, %q) = %v; want %v", tt.user, tt.name, got, tt.want)
		}
	}
}

func TestLoadFileErrors(t *testing.T) {
	for _, text := range []string{
		`[[user]]
name = "x"`, // no password, no token
		`[[user]]
name = "x"
password = "plain text"`,
		`[[user]]
name = "x"
tokens = ["short"]`,
		`[[user]]
name = "anonymous"
tokens = ["0123456789abcdefgh"]`,
		`[[rule]]
path = "/"
users = ["nobody"]
allow = ["read"]`,
		`[[rule]]
path = "/"
users = ["*"]
allow = ["fly"]`,
		`[[rule]]
path = "/../x"
users = ["*"]
allow = ["read"]`,
		`[[rule]]
path = "/"
users = ["*"]
alow = ["read"]`,
		`[[user]]
name = "x"
password = "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"`,
	} {
		if _, err := LoadFile(writeFile(t, text)); err == nil {
			t.Errorf("accepted:\n%s", text)
		} else if strings.Contains(err.Error(), "0123456789abcdefgh") {
			t.Errorf("the error shows a secret: %v", err)
		}
	}
}

func TestIdentify(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := New(testPolicy(t), func() time.Time { return now })
	id := func(set func(r *http.Request)) (string, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		set(r)
		return a.Identify(r)
	}
	cases := []struct {
		name string
		set  func(r *http.Request)
		user string
		err  error
	}{
		{"none", func(*http.Request) {}, "", nil},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tokenBob) }, "bob", nil},
		{"token as basic password", func(r *http.Request) { r.SetBasicAuth("", tokenBob) }, "bob", nil},
		{"token with its user", func(r *http.Request) { r.SetBasicAuth("bob", tokenBob) }, "bob", nil},
		{"argon2id password", func(r *http.Request) { r.SetBasicAuth("alice", "alice-pw") }, "alice", nil},
		{"bcrypt password", func(r *http.Request) { r.SetBasicAuth("carol", "carol-pw") }, "carol", nil},
		{"wrong password", func(r *http.Request) { r.SetBasicAuth("alice", "nope") }, "", ErrBadCredential},
		{"token of another user", func(r *http.Request) { r.SetBasicAuth("alice", tokenBob) }, "", ErrBadCredential},
		{"unknown user", func(r *http.Request) { r.SetBasicAuth("mallory", "x") }, "", ErrBadCredential},
		{"token under any name", func(r *http.Request) { r.SetBasicAuth("me", tokenBob) }, "bob", nil},
		{"bad bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, "", ErrBadCredential},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Negotiate abc") }, "", ErrBadCredential},
	}
	for _, tt := range cases {
		user, err := id(tt.set)
		if user != tt.user || !errors.Is(err, tt.err) {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, user, err, tt.user, tt.err)
		}
	}
	// Five failures above; five more use up the burst of ten.
	for range 5 {
		id(func(r *http.Request) { r.SetBasicAuth("alice", "guess") })
	}
	if _, err := id(func(r *http.Request) { r.SetBasicAuth("alice", "alice-pw") }); !errors.Is(err, ErrTooManyFailures) {
		t.Fatalf("after ten failures: %v; want ErrTooManyFailures", err)
	}
	if user, err := id(func(*http.Request) {}); user != "" || err != nil {
		t.Errorf("anonymous request of a blocked client: %q, %v", user, err)
	}
	now = now.Add(2 * time.Second)
	if user, err := id(func(r *http.Request) { r.SetBasicAuth("alice", "alice-pw") }); user != "alice" || err != nil {
		t.Errorf("after a pause: %q, %v", user, err)
	}
	// A reload drops the cached sign-in of a user who is gone.
	a.Reload(OneUser("another-token-0123456789", false))
	if _, err := id(func(r *http.Request) { r.SetBasicAuth("alice", "alice-pw") }); !errors.Is(err, ErrBadCredential) {
		t.Errorf("after a reload without alice: %v", err)
	}
}

// TestTokenUnderOwnName: a user with a password may send one of their
// tokens as the password of basic auth under their own name (as under
// any other), and doing so counts no failure against them.
func TestTokenUnderOwnName(t *testing.T) {
	a := New(testPolicy(t), nil)
	id := func(user, pass string) (string, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "192.0.2.7:1234"
		r.SetBasicAuth(user, pass)
		return a.Identify(r)
	}
	for range 20 {
		if user, err := id("carol", "carol-token-0123456789"); user != "carol" || err != nil {
			t.Fatalf("carol's token under her name: %q, %v", user, err)
		}
	}
	if user, err := id("carol", "carol-pw"); user != "carol" || err != nil {
		t.Fatalf("carol's password after her token twenty times: %q, %v", user, err)
	}
	if _, err := id("alice", "carol-token-0123456789"); !errors.Is(err, ErrBadCredential) {
		t.Errorf("carol's token under alice's name: %v", err)
	}
}

// TestSignInsBounded: a flood of wrong passwords costs at most the
// client's budget of hashes, the rest refused before any hash; and when
// every hashing slot is taken, a sign-in waits a moment, then is refused
// busy, without a failure counted.
func TestSignInsBounded(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := New(testPolicy(t), func() time.Time { return now })
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = "192.0.2.7:1234"
			r.SetBasicAuth("alice", "wrong")
			_, err := a.Identify(r)
			mu.Lock()
			switch {
			case errors.Is(err, ErrTooManyFailures):
				got["429"]++
			case errors.Is(err, ErrBadCredential):
				got["401"]++
			default:
				got[fmt.Sprint(err)]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if got["401"] != failBurst || got["429"] != 30-failBurst {
		t.Errorf("30 wrong passwords at once: %v; want %d checked, the rest refused", got, failBurst)
	}
	// alice's own budget is spent too, whoever tries her name next: her
	// tries come back as time passes.
	now = now.Add(failBurst * failEvery)
	for range cap(a.hashing) {
		a.hashing <- struct{}{}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.8:1234"
	r.SetBasicAuth("alice", "alice-pw")
	start := time.Now()
	if _, err := a.Identify(r); !errors.Is(err, ErrBusy) {
		t.Errorf("every slot taken: %v; want ErrBusy", err)
	}
	if d := time.Since(start); d < hashWait {
		t.Errorf("refused busy after %v, before the wait of %v", d, hashWait)
	}
	for range cap(a.hashing) {
		<-a.hashing
	}
	if user, err := a.Identify(r); user != "alice" || err != nil {
		t.Errorf("once a slot is free: %q, %v (a busy refusal must not count as a failure)", user, err)
	}
}

func TestHashPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("a real argon2id hash takes 64 MiB")
	}
	h, err := parseHash(HashPassword("pw"))
	if err != nil || !h.matches("pw") || h.matches("pw2") {
		t.Fatalf("HashPassword: %v", err)
	}
}

package auth

import (
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

const s3File = `
[[user]]
name = "alice"
s3_keys = [{ id = "LKALICE0000000000001", secret = "alice-secret-0123456789-abcdefghijklmnop" }]

[[user]]
name = "bob"
password = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$0Yq0e0Kk1r6JQ1NxK5m1uA"
s3_keys = [{ id = "LKBOB000000000000002", secret = "bob-secret-0123456789-abcdefghijklmnopqr" },
           { id = "LKBOB000000000000003", secret = "bob-other-secret-0123456789-abcdefghij" }]
`

// TestS3Keys: the keys of the access file find their users and secrets;
// the IDs are listed, never the secrets.
func TestS3Keys(t *testing.T) {
	p, err := LoadFile(writeFile(t, s3File))
	if err != nil {
		t.Fatal(err)
	}
	a := New(p, nil)
	r := httptest.NewRequest("GET", "/", nil)
	user, secret, err := a.S3Key(r, "LKBOB000000000000003")
	if err != nil || user != "bob" || secret != "bob-other-secret-0123456789-abcdefghij" {
		t.Fatalf("S3Key: %q %q %v", user, secret, err)
	}
	if got := p.S3Keys("bob"); strings.Join(got, ",") != "LKBOB000000000000002,LKBOB000000000000003" {
		t.Errorf("bob's key IDs: %v", got)
	}
	if got := p.UserNames(); strings.Join(got, ",") != "alice,bob" {
		t.Errorf("the users: %v", got)
	}
}

// TestS3KeyFailures: an unknown ID is a failure of the client's, and a
// client out of failures is refused even a known key.
func TestS3KeyFailures(t *testing.T) {
	p, err := LoadFile(writeFile(t, s3File))
	if err != nil {
		t.Fatal(err)
	}
	a := New(p, nil)
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.7:4711"
	for range failBurst {
		if _, _, err := a.S3Key(r, "LKNOBODY000000000000"); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("an unknown ID: %v", err)
		}
	}
	if _, _, err := a.S3Key(r, "LKALICE0000000000001"); !errors.Is(err, ErrTooManyFailures) {
		t.Errorf("a known key from a client out of failures: %v", err)
	}
	other := httptest.NewRequest("GET", "/", nil)
	other.RemoteAddr = "198.51.100.1:4711"
	if user, _, err := a.S3Key(other, "LKALICE0000000000001"); err != nil || user != "alice" {
		t.Errorf("another client: %q %v", user, err)
	}
}

// TestS3KeysRefused: keys that break the rules, keys given twice, and an
// access file with keys that others may read.
func TestS3KeysRefused(t *testing.T) {
	for name, text := range map[string]string{
		"a short id":            `[[user]]` + "\n" + `name = "a"` + "\n" + `s3_keys = [{ id = "LKSHORT", secret = "alice-secret-0123456789-abcdefghijklmnop" }]`,
		"an id with a /":        `[[user]]` + "\n" + `name = "a"` + "\n" + `s3_keys = [{ id = "LKALICE000000000/001", secret = "alice-secret-0123456789-abcdefghijklmnop" }]`,
		"a short secret":        `[[user]]` + "\n" + `name = "a"` + "\n" + `s3_keys = [{ id = "LKALICE0000000000001", secret = "short" }]`,
		"a secret with a space": `[[user]]` + "\n" + `name = "a"` + "\n" + `s3_keys = [{ id = "LKALICE0000000000001", secret = "alice secret 0123456789 abcdefghijklmnop" }]`,
		"an id twice":           s3File + "\n" + `[[user]]` + "\n" + `name = "c"` + "\n" + `s3_keys = [{ id = "LKALICE0000000000001", secret = "another-secret-0123456789-abcdefghijklm" }]`,
	} {
		if _, err := LoadFile(writeFile(t, text)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "secret-0123") {
			t.Errorf("%s: the error tells a secret: %v", name, err)
		}
	}
	f := writeFile(t, s3File)
	if err := os.Chmod(f, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(f); err == nil || !strings.Contains(err.Error(), "chmod o-rwx") {
		t.Errorf("a file with S3 keys that others may read: %v", err)
	}
	if err := os.Chmod(f, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(f); err != nil {
		t.Errorf("a file with S3 keys its group may read: %v", err)
	}
}

// TestNewS3Key: a new key passes the access file's rules, and is new.
func TestNewS3Key(t *testing.T) {
	id, secret := NewS3Key()
	id2, _ := NewS3Key()
	if id == id2 || !strings.HasPrefix(id, "LK") || len(id) != 20 || !alnum(id) || len(secret) != 40 || !printable(secret) {
		t.Errorf("NewS3Key: %q %q (then %q)", id, secret, id2)
	}
}

package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func loadText(t *testing.T, text string) (*Policy, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadFile(p)
}

func TestExpireTables(t *testing.T) {
	p, err := loadText(t, `
[[expire]]
path = "/inbox"
after = "7d"

[[expire]]
path = "/inbox/keep"
after = "0"

[[expire]]
path = "/tmp/fast"
after = "2s"
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want time.Duration
		ok   bool
	}{
		{"inbox/a.bin", 7 * 24 * time.Hour, true},
		{"inbox/sub/b", 7 * 24 * time.Hour, true},
		{"inbox/keep/c", 0, false},
		{"inboxes/d", 0, false},
		{"tmp/fast/e", 2 * time.Second, true},
		{"tmp/f", 0, false},
	} {
		got, ok := p.ExpiryOf(c.name)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("ExpiryOf(%q) = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if n := len(p.Expires()); n != 3 {
		t.Errorf("%d tables, want 3", n)
	}
}

func TestExpireTableMistakes(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"[[expire]]\npath = \"/a\"\n", "give after"},
		{"[[expire]]\npath = \"/a\"\nafter = \"soon\"\n", "after"},
		{"[[expire]]\npath = \"/a\"\nafter = \"-1d\"\n", "negative"},
		{"[[expire]]\npath = \"/.largo\"\nafter = \"1d\"\n", "hidden"},
		{"[[expire]]\npath = \"/a\"\nafter = \"1d\"\n[[expire]]\npath = \"a/\"\nafter = \"2d\"\n", "twice"},
		{"[[expire]]\npath = \"/a\"\nafter = \"1d\"\nwhen = 3\n", "unknown key"},
	} {
		_, err := loadText(t, c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want one saying %q", c.text, err, c.want)
		}
	}
}

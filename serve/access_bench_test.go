package serve

import (
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"largo/auth"
	"largo/disk"
)

// BenchmarkSmallFileAccess serves a 4 KiB file without access rules, and
// with twenty rules and a user signed in with Basic auth (a cached
// sign-in), to show what the rules cost a request.
func BenchmarkSmallFileAccess(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "pub"), 0o755)
	os.WriteFile(filepath.Join(dir, "pub", "small.bin"), make([]byte, 4096), 0o644)
	s, err := disk.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var text strings.Builder
	fmt.Fprintf(&text, "[[user]]\nname = \"bench\"\npassword = %q\n\n", benchHash())
	fmt.Fprintf(&text, "[[rule]]\npath = \"/\"\nusers = [\"*\"]\nallow = []\n\n")
	for i := range 18 {
		fmt.Fprintf(&text, "[[rule]]\npath = \"/area%d\"\nusers = [\"bench\"]\nallow = [\"read\"]\n\n", i)
	}
	fmt.Fprintf(&text, "[[rule]]\npath = \"/pub\"\nusers = [\"bench\"]\nallow = [\"read\", \"list\"]\n")
	p := filepath.Join(b.TempDir(), "access.toml")
	os.WriteFile(p, []byte(text.String()), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		access *auth.Access
		hdr    string
	}{
		{"none", nil, ""},
		{"rules", auth.New(pol, nil), "Basic " + base64.StdEncoding.EncodeToString([]byte("bench:bench-password"))},
	} {
		h := New(Config{Store: s, Access: tt.access})
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/pub/small.bin", nil)
				req.RemoteAddr = "127.0.0.1:1"
				if tt.hdr != "" {
					req.Header.Set("Authorization", tt.hdr)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// benchHash is an argon2id hash of "bench-password", made when a
// benchmark first asks for it, not when any test of the package starts
// (the first sign-in is outside the loop's concern: it is cached).
var benchHash = sync.OnceValue(func() string {
	return auth.HashPassword("bench-password")
})

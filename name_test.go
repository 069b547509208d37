package largo

import (
	"errors"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	tests := []struct {
		in   string
		want string
		bad  bool
	}{
		{"/", "", false},
		{"/a", "a", false},
		{"/a/", "a", false},
		{"/a/b.txt", "a/b.txt", false},
		{"/.hidden", ".hidden", false},
		{"/a/.largo/x", "a/.largo/x", false},
		{"/%2e%2e", "%2e%2e", false}, // literal name: never decoded twice
		{"/100% sure.txt", "100% sure.txt", false},
		{"/ünïcode/日本.txt", "ünïcode/日本.txt", false},
		{"", "", true},
		{"a", "", true},
		{"/..", "", true},
		{"/../etc/passwd", "", true},
		{"/a/../../b", "", true},
		{"/a/./b", "", true},
		{"/.", "", true},
		{"//etc/passwd", "", true},
		{"/a//b", "", true},
		{"/a\\..\\b", "", true},
		{"/a\x00b", "", true},
		{"/a\nb", "", true},
		{"/a\x7fb", "", true},
		{"/" + strings.Repeat("x", 256), "", true},
		{"/" + strings.Repeat("x/", 2100), "", true},
	}
	for _, tt := range tests {
		got, err := ParseName(tt.in)
		if tt.bad {
			if err == nil || !errors.Is(err, ErrInvalidName) {
				t.Errorf("ParseName(%q) = %q, %v; want ErrInvalidName", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestHidden(t *testing.T) {
	for name, want := range map[string]bool{
		"":             false,
		"a/b":          false,
		".env":         true,
		"a/.git/HEAD":  true,
		".largo/tmp/x": true,
		"a.b/c..d":     false,
	} {
		if got := Hidden(name); got != want {
			t.Errorf("Hidden(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzParseName checks the invariants every accepted name keeps: it is
// relative, has no dot or empty elements, no backslash or control byte, and
// joining it back under "/" gives the input without its trailing slash.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/../x", "/a/./b", "//x", "/a\\b", "/a\x00", "/.git/config", "/a/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name, err := ParseName(in)
		if err != nil {
			return
		}
		if name == "" {
			if strings.Trim(in, "/") != "" {
				t.Fatalf("ParseName(%q) = root", in)
			}
			return
		}
		if strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.ContainsAny(name, "\\\x00") {
			t.Fatalf("ParseName(%q) = %q", in, name)
		}
		for _, e := range strings.Split(name, "/") {
			if e == "" || e == "." || e == ".." {
				t.Fatalf("ParseName(%q) = %q: element %q", in, name, e)
			}
		}
		if "/"+name != strings.TrimSuffix(in, "/") {
			t.Fatalf("ParseName(%q) = %q: not the input", in, name)
		}
	})
}

func TestCheckNew(t *testing.T) {
	for name, want := range map[string]error{
		"a/b.txt":              nil,
		"café/naïve.txt":       nil,
		"日本語.txt":              nil,
		"evil\u202etxt.exe":    ErrUnsafeName,
		"a\u2066b":             ErrUnsafeName,
		"zero\u200bwidth":      ErrUnsafeName,
		"joiner\u200d":         ErrUnsafeName,
		"c1\u0085":             ErrUnsafeName,
		"soft\u00adhyphen":     ErrUnsafeName,
		"bom\ufeff":            ErrUnsafeName,
		"dot.":                 ErrUnsafeName,
		"dir./x":               ErrUnsafeName,
		"space ":               ErrUnsafeName,
		"dir /x":               ErrUnsafeName,
		"bad\xff":              ErrInvalidName,
		"fine.dots.and spaces": nil,
	} {
		if err := CheckNew(name); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("CheckNew(%q) = %v; want %v", name, err, want)
		}
	}
}

func TestEscapeName(t *testing.T) {
	for name, want := range map[string]string{
		"plain.txt":         "plain.txt",
		"café":              "café",
		"evil\u202etxt.exe": `evil\u{202E}txt.exe`,
		"bad\xffbyte":       `bad\x{FF}byte`,
		"\u200b":            `\u{200B}`,
	} {
		if got := EscapeName(name); got != want {
			t.Errorf("EscapeName(%q) = %q; want %q", name, got, want)
		}
	}
}

func TestSidecarBase(t *testing.T) {
	for name, want := range map[string]string{
		"a.txt.gz": "a.txt", "NOTES.br": "NOTES", "d/x.zst": "d/x", "x.gz.gz": "x.gz",
		".gz": "", "d/.br": "", "plain": "", "a.tgz": "",
	} {
		base, _, ok := SidecarBase(name)
		if ok != (want != "") || base != want {
			t.Errorf("SidecarBase(%q) = %q, %v; want %q", name, base, ok, want)
		}
	}
}

func TestWithinBelow(t *testing.T) {
	for _, tt := range []struct {
		dir, name     string
		within, below bool
	}{
		{"", "", true, false},
		{"", "a", true, true},
		{"a", "a", true, false},
		{"a", "a/b", true, true},
		{"a", "ab", false, false},
		{"a/b", "a", false, false},
		{"a/b", "a/b/c/d", true, true},
		{"a", "", false, false},
	} {
		if got := Within(tt.dir, tt.name); got != tt.within {
			t.Errorf("Within(%q, %q) = %v", tt.dir, tt.name, got)
		}
		if got := Below(tt.dir, tt.name); got != tt.below {
			t.Errorf("Below(%q, %q) = %v", tt.dir, tt.name, got)
		}
	}
}

func TestParent(t *testing.T) {
	for name, want := range map[string]string{"": "", "c": "", "a/b": "a", "a/b/c": "a/b"} {
		if got := Parent(name); got != want {
			t.Errorf("Parent(%q) = %q; want %q", name, got, want)
		}
		if name != "" && Join(Parent(name), name[strings.LastIndexByte(name, '/')+1:]) != name {
			t.Errorf("Join(Parent(%q), its last element) is not %q", name, name)
		}
	}
}

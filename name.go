package largo

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// StateDir is the folder, inside the served root, where largo keeps its own
// state (temporary and resumable uploads). It is hidden like every dot-folder.
const StateDir = ".largo"

// ReservedPrefix is the first element of the names that belong to largo's
// own endpoints (/_largo/ on HTTP): no file may be written there, and none
// is served from there.
const ReservedPrefix = "_largo"

// MaxNameLen bounds the length of a name in bytes, and MaxElemLen the length
// of each of its elements: the limits of common filesystems.
const (
	MaxNameLen = 4096
	MaxElemLen = 255
)

// ParseName turns a decoded URL path into a store name: the path without its
// leading and trailing slashes. It is the single gate every name passes
// before it reaches a store, and it refuses (with an error wrapping
// ErrInvalidName) what could reach outside the root or be read differently
// by different layers: NUL and other control bytes below 0x20, backslashes,
// "." and ".." elements, empty elements (a doubled slash) and over-long names.
//
// A name that is valid but hidden (see Hidden) is returned with no error:
// hiding is a separate decision, answered as "not found" rather than "bad
// request" so that hidden files cannot be probed.
func ParseName(p string) (string, error) {
	if len(p) > MaxNameLen {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrInvalidName, MaxNameLen)
	}
	if p == "" || p[0] != '/' {
		return "", fmt.Errorf("%w: must start with /", ErrInvalidName)
	}
	name := strings.TrimPrefix(p, "/")
	name = strings.TrimSuffix(name, "/")
	if name == "" {
		return "", nil
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c < 0x20 || c == 0x7f:
			return "", fmt.Errorf("%w: control byte 0x%02x", ErrInvalidName, c)
		case c == '\\':
			return "", fmt.Errorf("%w: backslash", ErrInvalidName)
		}
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch {
		case elem == "":
			return "", fmt.Errorf("%w: empty element", ErrInvalidName)
		case elem == "." || elem == "..":
			return "", fmt.Errorf("%w: dot element", ErrInvalidName)
		case len(elem) > MaxElemLen:
			return "", fmt.Errorf("%w: element longer than %d bytes", ErrInvalidName, MaxElemLen)
		}
	}
	return name, nil
}

// Hidden reports whether a valid name is never served: any element that
// starts with a dot (dotfiles, dot-folders, and StateDir with all it holds).
func Hidden(name string) bool {
	for elem := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(elem, ".") {
			return true
		}
	}
	return false
}

// Reserved reports whether a valid name is outside what clients may read
// or write: hidden names, and names under ReservedPrefix.
func Reserved(name string) bool {
	return Hidden(name) || strings.HasPrefix(name, ReservedPrefix)
}

// Join joins a folder name and an element into a name.
func Join(dir, elem string) string {
	if dir == "" {
		return elem
	}
	return dir + "/" + elem
}

// Parent returns the folder of a name: "a/b" for "a/b/c", "" for "c"
// (the root's entries).
func Parent(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// CheckNew applies the policy of new names to a name that passed
// ParseName: what a write, a new folder or a move may create. Besides
// what ParseName refuses, a new name must be UTF-8 (so that it reads back
// the same in listings, JSON and archives) and must not hold what makes
// one name look like another: bidirectional controls (U+202A-U+202E,
// U+2066-U+2069, U+200E, U+200F, U+061C), C1 controls (U+0080-U+009F),
// zero-width and invisible characters (U+200B-U+200D, U+2060-U+2064,
// U+FEFF, U+00AD, U+180E), nor an element that ends with a dot or a
// space, which Windows drops. Such names are refused with an error
// wrapping ErrUnsafeName (or ErrInvalidName for invalid UTF-8).
// Files already on disk with such names are served; listings show them
// escaped (EscapeName).
func CheckNew(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("%q: %w: not UTF-8", name, ErrInvalidName)
	}
	for elem := range strings.SplitSeq(name, "/") {
		if strings.HasSuffix(elem, ".") || strings.HasSuffix(elem, " ") {
			return fmt.Errorf("%q: %w: an element ends with a dot or a space", name, ErrUnsafeName)
		}
	}
	for _, r := range name {
		if Deceptive(r) {
			return fmt.Errorf("%q: %w: U+%04X", name, ErrUnsafeName, r)
		}
	}
	return nil
}

// Deceptive reports whether r is a character a name must not hold (see
// CheckNew): it changes how the characters around it are shown, or is
// not shown at all.
func Deceptive(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f, // C1 controls
		r >= 0x200b && r <= 0x200f, // zero-width space, joiners, LRM, RLM
		r >= 0x202a && r <= 0x202e, // bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0x061c, r == 0x00ad, r == 0x180e, r == 0xfeff:
		return true
	}
	return false
}

// EscapeName returns name as a listing shows it: each deceptive character
// (see Deceptive) and each byte that is not UTF-8 written out visibly as
// \u{XXXX} or \x{XX}, so that a name on disk cannot pass for another.
// Other names are returned as they are.
func EscapeName(name string) string {
	clean := utf8.ValidString(name)
	if clean {
		for _, r := range name {
			if Deceptive(r) {
				clean = false
				break
			}
		}
	}
	if clean {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x{%02X}`, name[i])
		case Deceptive(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	return b.String()
}

// SidecarExts are the extensions of precompressed sidecars: NAME.zst,
// NAME.br and NAME.gz may hold NAME's bytes, compressed.
var SidecarExts = [...]string{".zst", ".br", ".gz"}

// SidecarBase reports whether name has the form of a sidecar, and if so
// returns the name of the file it may be the sidecar of and its
// extension. This is the one definition of a sidecar's name: whether a
// file of that form is sent as its base's encoding is the server's
// choice, but whoever may not read (or write) the base may not read (or
// write) anything of that form beside it.
func SidecarBase(name string) (base, ext string, ok bool) {
	for _, e := range SidecarExts {
		if b, found := strings.CutSuffix(name, e); found && b != "" && !strings.HasSuffix(b, "/") {
			return b, e, true
		}
	}
	return "", "", false
}

// Within reports whether name is dir or below it. The root, "", holds
// every name.
func Within(dir, name string) bool {
	return dir == "" || name == dir || len(name) > len(dir) && name[len(dir)] == '/' && strings.HasPrefix(name, dir)
}

// Below reports whether name is strictly below dir.
func Below(dir, name string) bool { return name != dir && Within(dir, name) }

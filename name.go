package largo

import (
	"fmt"
	"strings"
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

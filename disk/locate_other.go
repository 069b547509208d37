//go:build !linux

package disk

import "largo"

// Location implements largo.Located: on this system a descriptor does not
// tell its path, and the caller resolves the name itself.
func (f *file) Location() (string, error) {
	if f.direct {
		return f.name, nil
	}
	return "", largo.ErrUnsupported
}

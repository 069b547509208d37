package gate

import (
	"largo"
	"largo/auth"
	"largo/links"
)

// grants returns the permissions l's scope gives on name, before its
// maker's rights: a folder link reads and lists its folder and what is
// below; a file link reads its file (and the sidecars of its file, which
// hold its bytes); a drop box writes names directly in its folder. With
// any set, any of them is enough (a look at a name).
func grants(l *links.Link, name string) auth.Perm {
	switch l.Kind {
	case links.Folder:
		if largo.Within(l.Path, name) {
			return auth.Read | auth.List
		}
	case links.File:
		if name == l.Path {
			return auth.Read
		}
		if base, _, ok := largo.SidecarBase(name); ok && base == l.Path {
			return auth.Read
		}
	case links.Drop:
		if name != l.Path && largo.Parent(name) == l.Path {
			return auth.Write
		}
	}
	return 0
}

package largo

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// The kinds of error a Store returns, wrapped with %w around their cause. The
// HTTP layer maps each kind to one status in a single table.
var (
	// ErrNotFound: no such file or folder, or one the policy hides.
	ErrNotFound = errors.New("not found")
	// ErrInvalidName: a name that breaks the naming rules (see ParseName).
	ErrInvalidName = errors.New("invalid name")
	// ErrUnsafeName: a new name that could pass for another (see
	// CheckNew).
	ErrUnsafeName = errors.New("name with invisible or direction-changing characters, or an element ending in a dot or a space")
	// ErrIsDir: a file operation on a folder.
	ErrIsDir = errors.New("is a folder")
	// ErrNotDir: a folder operation on a file, or a file used as a folder.
	ErrNotDir = errors.New("not a folder")
	// ErrExist: the target exists and the operation requires that it does not.
	ErrExist = errors.New("already exists")
	// ErrNotEmpty: a folder that must be empty is not.
	ErrNotEmpty = errors.New("folder not empty")
	// ErrPrecondition: a conditional operation whose condition failed.
	ErrPrecondition = errors.New("precondition failed")
	// ErrPermission: the store, or the access rules for a requester who
	// is known, refuse access to the file.
	ErrPermission = errors.New("permission denied")
	// ErrCreateOnly: a requester that may only create new files (a
	// drop-box link) asked for anything else.
	ErrCreateOnly = errors.New("only new files may be created")
	// ErrNameTaken: a requester that may only create new files (a
	// drop-box link) wrote to a name that is taken. It comes wrapped with
	// ErrPrecondition, the condition such a write carries.
	ErrNameTaken = errors.New("name taken")
	// ErrSidecarName: a requester that may not replace a file NAME (a
	// drop-box link) asked to write NAME.gz, NAME.br or NAME.zst beside
	// it, which would be taken for NAME's compressed form.
	ErrSidecarName = errors.New("the name of another file's compressed form")
	// ErrUnauthorized: the access rules refuse a requester who sent no
	// credential, and may yet sign in.
	ErrUnauthorized = errors.New("sign-in required")
	// ErrTooLarge: a write larger than the configured limit.
	ErrTooLarge = errors.New("too large")
	// ErrNoSpace: the store has no room for the write.
	ErrNoSpace = errors.New("no space left")
	// ErrDigest: the content does not match the digest the client sent.
	ErrDigest = errors.New("digest mismatch")
	// ErrUnsupported: the store cannot perform the operation.
	ErrUnsupported = errors.New("not supported by this store")
	// ErrBusy: the store cannot take the operation now, for want of a
	// resource that frees itself (the process's file descriptors); a
	// retry later may succeed.
	ErrBusy = errors.New("busy")
	// ErrReservedName: a hidden name, or one under the reserved prefix,
	// written to.
	ErrReservedName = errors.New("hidden or reserved name")
	// ErrMissingFolder: a write's folder does not exist (and folders are
	// not made for it).
	ErrMissingFolder = errors.New("folder does not exist")
	// ErrParentNotDir: a file stands where a write's folder should.
	ErrParentNotDir = errors.New("parent is not a folder")
	// ErrCondUnsupported: the store cannot apply conditions to writes.
	ErrCondUnsupported = errors.New("conditional writes not supported by the store")
	// ErrBodyTimeout: the client stopped sending a write's bytes.
	ErrBodyTimeout = errors.New("request body stalled")
	// ErrBodyIncomplete: a write's bytes ended early or broke.
	ErrBodyIncomplete = errors.New("request body incomplete")
	// ErrLocked: another client holds a lock on the target (WebDAV).
	ErrLocked = errors.New("locked")
	// ErrSymlink: a store that follows no symbolic link met one on the
	// way to a name (a link made since the name was judged). The access
	// gate then decides again where the name leads; a store returns it
	// wrapped together with ErrNotFound, which is what it means to a
	// caller that does not decide again.
	ErrSymlink = errors.New("a symbolic link on the way")
	// ErrChanged: a folder a write was judged in was moved, removed or
	// replaced before the write committed; nothing was placed.
	ErrChanged = errors.New("the folder changed while the write was on its way")
)

// DigestError is a write whose bytes differ from the digest the client
// sent. It wraps ErrDigest.
type DigestError struct {
	Name   string
	SHA256 []byte // what the bytes hash to
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%s: %v: computed sha-256 %s", e.Name, ErrDigest, hex.EncodeToString(e.SHA256))
}

func (e *DigestError) Unwrap() error { return ErrDigest }

// QuotaError is a write refused because it would take a quota past its
// limit. It wraps ErrNoSpace, and its text is what a client is told: the
// quota, its limit and its use, with no local path.
type QuotaError struct {
	// Quota names the quota: "/projects", "user alice", "the link's
	// maker".
	Quota string
	// Limit and Used are the quota's limit and what is used of it
	// (stored, and held by writes in flight), in bytes, or in files with
	// Files.
	Limit, Used int64
	Files       bool
}

func (e *QuotaError) Error() string {
	if e.Files {
		return fmt.Sprintf("quota of %s: %d files, %d used", e.Quota, e.Limit, e.Used)
	}
	return fmt.Sprintf("quota of %s: %s, %s used", e.Quota, FormatSize(e.Limit), FormatSize(e.Used))
}

func (e *QuotaError) Unwrap() error { return ErrNoSpace }

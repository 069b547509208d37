package dav

import (
	"context"
	"encoding/xml"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/webdav"

	"largo"
	"largo/gate"
)

// A PROPFIND answers DAV:lockdiscovery (RFC 4918, 15.8) with the live
// locks that apply to a resource: its own and those of its folders that
// hold their whole tree, each as an activelock with its scope, type,
// depth, timeout left and root. The lock's token is shown to its holder
// alone, and its owner to users, never through a share link. The library
// knows the property but cannot list locks; the adapter gives it among a
// file's dead properties, which the library answers first.
//
// A PROPFIND of Depth 1 reads the locks once for the whole folder: those
// on it and above it, and the records of the locks on its entries; and
// nothing at all when the state area holds no lock.

var lockDiscoveryName = xml.Name{Space: "DAV:", Local: "lockdiscovery"}

// folderLocks are the live locks that may apply to the entries of the
// folder a walk lists.
type folderLocks struct {
	above   []*lock          // the locks that apply to the folder
	entries map[string]*lock // the locks on its entries, by entry name
}

// lockDiscovery returns the DAV:lockdiscovery property of name.
func (fsys *fileSystem) lockDiscovery(ctx context.Context, name string) (webdav.Property, error) {
	held, err := fsys.locksOn(ctx, name)
	if err != nil {
		return webdav.Property{}, err
	}
	var b strings.Builder
	p, _ := gate.From(ctx)
	who, now := holder(ctx), fsys.h.cfg.Locks.now()
	for _, l := range held {
		fsys.activeLock(&b, l, now, who, p.LinkID() != "")
	}
	return webdav.Property{XMLName: lockDiscoveryName, InnerXML: []byte(b.String())}, nil
}

// locksOn returns the live locks that apply to name.
func (fsys *fileSystem) locksOn(ctx context.Context, name string) ([]*lock, error) {
	ls := fsys.h.cfg.Locks
	if fsys.anyLocks == 0 {
		ok, err := ls.any(ctx)
		if err != nil {
			return nil, err
		}
		fsys.anyLocks = 1
		if ok {
			fsys.anyLocks = 2
		}
	}
	if fsys.anyLocks == 1 {
		return nil, nil
	}
	if !fsys.listed || name == "" || largo.Parent(name) != fsys.dir {
		return ls.covering(ctx, name)
	}
	if fsys.locksAt == nil {
		fl, err := fsys.readFolderLocks(ctx, fsys.dir)
		if err != nil {
			return nil, err
		}
		fsys.locksAt = fl
	}
	var out []*lock
	for _, l := range fsys.locksAt.above {
		if l.covers(name) {
			out = append(out, l)
		}
	}
	if l := fsys.locksAt.entries[path.Base(name)]; l != nil {
		out = append(out, l)
	}
	return out, nil
}

// readFolderLocks reads the locks that may apply to the entries of dir.
func (fsys *fileSystem) readFolderLocks(ctx context.Context, dir string) (*folderLocks, error) {
	ls := fsys.h.cfg.Locks
	above, err := ls.covering(ctx, dir)
	if err != nil {
		return nil, err
	}
	fl := &folderLocks{above: above, entries: map[string]*lock{}}
	var names []string
	for rec, err := range ls.st.List(ctx, belowPrefix(lockPrefix, dir)) {
		if err != nil {
			return nil, err
		}
		name, err := unescape(strings.TrimPrefix(rec.Key, lockPrefix))
		if err != nil || name == dir || largo.Parent(name) != dir {
			continue
		}
		names = append(names, name)
	}
	for _, name := range names {
		l, err := ls.get(ctx, name)
		if err != nil {
			return nil, err
		}
		if l != nil {
			fl.entries[path.Base(name)] = l
		}
	}
	return fl, nil
}

// activeLock writes l as an activelock element, as who (a principal's
// text form) may see it; link tells that who holds a share link.
func (fsys *fileSystem) activeLock(b *strings.Builder, l *lock, now time.Time, who string, link bool) {
	depth := "infinity"
	if l.ZeroDepth {
		depth = "0"
	}
	left := l.Expires.Sub(now)
	secs := int64((left + time.Second - 1) / time.Second)
	b.WriteString(`<D:activelock xmlns:D="DAV:"><D:locktype><D:write/></D:locktype><D:lockscope><D:exclusive/></D:lockscope><D:depth>`)
	b.WriteString(depth)
	b.WriteString(`</D:depth>`)
	if l.Owner != "" && !link {
		b.WriteString(`<D:owner>`)
		b.WriteString(l.Owner)
		b.WriteString(`</D:owner>`)
	}
	b.WriteString(`<D:timeout>Second-`)
	b.WriteString(strconv.FormatInt(secs, 10))
	b.WriteString(`</D:timeout>`)
	if l.heldBy(who) {
		b.WriteString(`<D:locktoken><D:href>`)
		xml.EscapeText(b, []byte(l.Token))
		b.WriteString(`</D:href></D:locktoken>`)
	}
	b.WriteString(`<D:lockroot><D:href>`)
	xml.EscapeText(b, []byte((&url.URL{Path: fsys.at.href(l.Root)}).EscapedPath()))
	b.WriteString(`</D:href></D:lockroot></D:activelock>`)
}

// Package startpages gives back the pages of the running executable that
// start-up mapped and serving does not use.
//
// A Go server's resident memory at idle is mostly not its heap: it is the
// pages of its own executable (code, and the read-only data beside it:
// type descriptors, the function tables, embedded files) that the process
// has touched. largo's start-up runs a lot of code once (flags, the access
// file, the stores, templates, the initialisers of the S3 SDK and of every
// other dependency) and the kernel maps each page that code touches, and up
// to 15 neighbours with it (fault-around), so a binary that grows makes the
// idle server grow, although serving a file afterwards runs a small part of
// it.
//
// Release asks the kernel to unmap the resident pages of the executable's
// read-only mappings (madvise MADV_DONTNEED). They are clean pages of a
// file: nothing is lost, and the next use of one is a minor fault that maps
// it again from the page cache. What serving touches comes back at its first
// request; what only start-up touched stays out of the process. The pages
// stay in the page cache, shared and reclaimable, as they were: this lowers
// the process's resident set (what ps, top and the lab report), not what the
// machine caches of the file.
//
// A read-only mapping that holds a page of its own (a page written before it
// was made read-only, as a dynamic loader does to relocated data in a
// position-independent build) is left alone: unmapping it would lose what
// was written. So is every writable mapping.
//
// Release is meant to be called once, when start-up is over; it is safe to
// call at any time and from any goroutine, and there is no state.
package startpages

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mapping is one entry of /proc/PID/smaps: an address range, how it may be
// used, the file it maps and what of it is resident.
type mapping struct {
	lo, hi    uint64
	perms     string // "r-xp": read, write, execute, private or shared
	dev       string
	inode     uint64
	rss       uint64 // bytes resident
	anonymous uint64 // bytes resident that are the process's own copies
}

// readOnlyFile reports whether m maps a file privately, read-only, with no
// page of its own: one whose resident pages can be unmapped and read again.
func (m mapping) readOnlyFile() bool {
	return m.inode != 0 && len(m.perms) == 4 && m.perms[1] == '-' && m.perms[3] == 'p' && m.anonymous == 0
}

// parseSmaps reads the mappings of an smaps file.
func parseSmaps(r io.Reader) ([]mapping, error) {
	var ms []mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if m, ok := parseHeader(line); ok {
			ms = append(ms, m)
			continue
		}
		if len(ms) == 0 {
			continue
		}
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var field *uint64
		switch string(key) {
		case "Rss":
			field = &ms[len(ms)-1].rss
		case "Anonymous":
			field = &ms[len(ms)-1].anonymous
		default:
			continue
		}
		kb, ok := bytes.CutSuffix(bytes.TrimSpace(rest), []byte(" kB"))
		if !ok {
			return nil, fmt.Errorf("smaps: %q: no size in kB", line)
		}
		n, err := strconv.ParseUint(string(kb), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("smaps: %q: %v", line, err)
		}
		*field = n << 10
	}
	return ms, sc.Err()
}

// parseHeader parses the first line of a mapping's entry: "lo-hi perms
// offset dev inode [path]". Other lines ("Rss:   12 kB") are not headers.
func parseHeader(line []byte) (mapping, bool) {
	f := strings.Fields(string(line))
	if len(f) < 5 || strings.HasSuffix(f[0], ":") {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, false
	}
	var m mapping
	var err error
	if m.lo, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return mapping{}, false
	}
	if m.hi, err = strconv.ParseUint(hi, 16, 64); err != nil || m.hi < m.lo {
		return mapping{}, false
	}
	if m.inode, err = strconv.ParseUint(f[4], 10, 64); err != nil {
		return mapping{}, false
	}
	m.perms, m.dev = f[1], f[3]
	return m, true
}

// ofExecutable returns the mappings to release: those of the file that
// holds the code at pc which are private, read-only and hold no page of
// their own.
func ofExecutable(ms []mapping, pc uint64) []mapping {
	var exe *mapping
	for i := range ms {
		if ms[i].lo <= pc && pc < ms[i].hi {
			exe = &ms[i]
			break
		}
	}
	if exe == nil || exe.inode == 0 {
		return nil
	}
	var out []mapping
	for _, m := range ms {
		if m.dev == exe.dev && m.inode == exe.inode && m.readOnlyFile() {
			out = append(out, m)
		}
	}
	return out
}

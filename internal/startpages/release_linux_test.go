package startpages

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// resident returns the bytes resident in the mappings Release would
// release.
func resident(t *testing.T) uint64 {
	t.Helper()
	ms := ownSmaps(t)
	var n uint64
	for _, m := range ofExecutable(ms, uint64(reflect.ValueOf(Release).Pointer())) {
		n += m.rss
	}
	return n
}

func ownSmaps(t *testing.T) []mapping {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := parseSmaps(f)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestRelease(t *testing.T) {
	before := resident(t)
	if before < 1<<20 {
		t.Fatalf("%d bytes of the test binary resident before: expected more", before)
	}
	released, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := resident(t)
	t.Logf("resident: %d KiB before, %d after; %d released", before>>10, after>>10, released>>10)
	// What the release and the reading of smaps use comes back at once,
	// with the pages around it, and nothing else should.
	if uint64(released) < before*9/10 || after+512<<10 > before {
		t.Errorf("resident %d KiB before, %d after, %d released: not released", before>>10, after>>10, released>>10)
	}
	// What was released comes back when used: the process still works.
	b, err := json.Marshal(map[string][]int{"a": {1, 2}})
	if err != nil || string(b) != `{"a":[1,2]}` {
		t.Fatalf("after the release: %s, %v", b, err)
	}
}

// TestPagesOfItsOwnAreKept checks what the safety of Release rests on: the
// kernel counts a page written in a private mapping before it was made
// read-only as the process's own (Anonymous), so the mapping is not chosen,
// while one only read is chosen.
func TestPagesOfItsOwnAreKept(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, 3*4096), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	written, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(written)
	written[0] = 1
	if err := unix.Mprotect(written, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	read, err := unix.Mmap(int(f.Fd()), 2*4096, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(read)
	sink = read[0]

	found := 0
	for _, m := range ownSmaps(t) {
		switch uintptr(m.lo) {
		case addr(written):
			found++
			if m.perms != "r--p" || m.anonymous == 0 || m.readOnlyFile() {
				t.Errorf("the written mapping %+v would be released", m)
			}
		case addr(read):
			found++
			if m.perms != "r--p" || m.rss == 0 || !m.readOnlyFile() {
				t.Errorf("the read mapping %+v would not be released", m)
			}
		}
	}
	if found != 2 {
		t.Fatalf("found %d of the 2 mappings", found)
	}
}

var sink byte

func addr(b []byte) uintptr { return reflect.ValueOf(b).Pointer() }

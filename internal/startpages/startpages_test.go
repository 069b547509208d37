package startpages

import (
	"strings"
	"testing"
)

const smaps = `00400000-010d7000 r-xp 00000000 fe:00 9979375                            /srv/largo
Size:              13148 kB
Rss:                8476 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
010d7000-01d25000 r--p 00cd7000 fe:00 9979375                            /srv/largo
Rss:                7800 kB
Anonymous:             0 kB
01d25000-01d30000 r--p 01925000 fe:00 9979375                            /srv/largo
Rss:                  40 kB
Anonymous:            12 kB
01d30000-01e2e000 rw-p 01930000 fe:00 9979375                            /srv/largo
Rss:                 356 kB
Anonymous:           300 kB
01e2e000-01e40000 r--s 00000000 fe:00 9979375                            /srv/largo
Rss:                  20 kB
Anonymous:             0 kB
7f0000000000-7f0000100000 r--p 00000000 fe:00 1234                       /usr/lib/other with spaces.so
Rss:                 100 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 rw-p 00000000 00:00 0 
Rss:                1744 kB
Anonymous:          1744 kB
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   4 kB
Anonymous:             0 kB
`

func TestParseSmaps(t *testing.T) {
	ms, err := parseSmaps(strings.NewReader(smaps))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 8 {
		t.Fatalf("%d mappings, want 8", len(ms))
	}
	first := mapping{lo: 0x400000, hi: 0x10d7000, perms: "r-xp", dev: "fe:00", inode: 9979375, rss: 8476 << 10}
	if ms[0] != first {
		t.Errorf("first mapping %+v, want %+v", ms[0], first)
	}
	if ms[2].anonymous != 12<<10 || ms[6].rss != 1744<<10 {
		t.Errorf("sizes: %+v, %+v", ms[2], ms[6])
	}
}

func TestParseSmapsRefusesBadSizes(t *testing.T) {
	for _, in := range []string{
		"00400000-00401000 r-xp 00000000 fe:00 1 /x\nRss: 12 MB\n",
		"00400000-00401000 r-xp 00000000 fe:00 1 /x\nRss: many kB\n",
	} {
		if _, err := parseSmaps(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestOfExecutable(t *testing.T) {
	ms, err := parseSmaps(strings.NewReader(smaps))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pc   uint64
		want []uint64 // the first addresses of the mappings chosen
	}{
		// The code's file: its text and its read-only data, not the
		// relocated page (a page of its own), the writable data, nor the
		// shared mapping.
		{"in the text", 0x500000, []uint64{0x400000, 0x10d7000}},
		{"in the data", 0x1d31000, []uint64{0x400000, 0x10d7000}},
		{"in another file", 0x7f0000000010, []uint64{0x7f0000000000}},
		{"in memory of no file", 0x7f0000200010, nil},
		{"in the vdso", 0x7ffd00000010, nil},
		{"nowhere", 0x10, nil},
	} {
		var got []uint64
		for _, m := range ofExecutable(ms, c.pc) {
			got = append(got, m.lo)
		}
		if !equal(got, c.want) {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

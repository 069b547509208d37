package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/internal/testenv"
	"largo/listing"
)

// oddTree holds the sizes and names where a tar's or a zip's arithmetic
// could slip: empty files, files of a block and either side of one, names
// past USTAR's 100 bytes (with and without a place to split them), past
// 255, and not ASCII (both need PAX records).
var oddTree = map[string]string{
	"empty":                  "",
	"one":                    "1",
	"b511":                   strings.Repeat("a", 511),
	"b512":                   strings.Repeat("b", 512),
	"b513":                   strings.Repeat("c", 513),
	"d/b1024":                strings.Repeat("d", 1024),
	"d/e/zero":               "",
	strings.Repeat("n", 99):  "name of 99 bytes",
	strings.Repeat("n", 140): "name of 140 bytes, no slash to split at",
	strings.Repeat("s", 60) + "/" + strings.Repeat("t", 60):   "a path of 121 bytes that splits",
	strings.Repeat("f", 200) + "/" + strings.Repeat("g", 100): "a path past 255 bytes",
	"ünï/名前.txt": "unicode",
	"z-last":     "the last file",
}

// countStore counts the files opened through it.
type countStore struct {
	largo.Store
	opened atomic.Int32
}

func (s *countStore) Open(ctx context.Context, name string) (largo.File, error) {
	s.opened.Add(1)
	return s.Store.Open(ctx, name)
}

// oddStore makes oddTree on disk, with an empty folder, and returns it
// with a CRC32Func that knows every file's CRC-32 (computed here, as a
// record kept at write time would hold it).
func oddStore(t *testing.T) (*countStore, string, CRC32Func) {
	t.Helper()
	dir := t.TempDir()
	crcs := map[string]uint32{}
	for name, content := range oddTree {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		crcs[name] = crc32.ChecksumIEEE([]byte(content))
	}
	os.Mkdir(filepath.Join(dir, "d", "empty-folder"), 0o755)
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	known := func(_ context.Context, name, _ string) (uint32, bool) {
		c, ok := crcs[name]
		return c, ok
	}
	return &countStore{Store: s}, dir, known
}

// memStore is a tree of files in memory, for tests that walk it many
// times: every file's ETag is its content's CRC-32, every time flatTime.
type memStore map[string]string

func (m memStore) Stat(_ context.Context, name string) (largo.Info, error) {
	if c, ok := m[name]; ok {
		return m.info(name, c), nil
	}
	for n := range m {
		if name == "" || strings.HasPrefix(n, name+"/") {
			return largo.Info{Name: path.Base(name), IsDir: true, ModTime: flatTime}, nil
		}
	}
	return largo.Info{}, largo.ErrNotFound
}

func (m memStore) info(name, content string) largo.Info {
	return largo.Info{Name: path.Base(name), Size: int64(len(content)), ModTime: flatTime, ETag: fmt.Sprintf(`"%08x"`, crc32.ChecksumIEEE([]byte(content)))}
}

func (m memStore) List(ctx context.Context, dir string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		dirs := map[string]bool{}
		for n, c := range m {
			rest, ok := strings.CutPrefix(n, dir+"/")
			if dir == "" {
				rest, ok = n, true
			}
			if !ok {
				continue
			}
			if d, _, sub := strings.Cut(rest, "/"); sub {
				if !dirs[d] {
					dirs[d] = true
					if !yield(largo.Info{Name: d, IsDir: true, ModTime: flatTime}, nil) {
						return
					}
				}
				continue
			}
			if !yield(m.info(n, c), nil) {
				return
			}
		}
	}
}

func (m memStore) Open(_ context.Context, name string) (largo.File, error) {
	c, ok := m[name]
	if !ok {
		return nil, largo.ErrNotFound
	}
	return &memFile{Reader: strings.NewReader(c), info: m.info(name, c)}, nil
}

// TestRangeArithmetic writes ranges of a small tar and zip of odd sizes
// and names, from on and around every boundary between their pieces and
// from random offsets, to the end and for a short random length, and
// compares each with the same bytes of the whole archive.
func TestRangeArithmetic(t *testing.T) {
	s := memStore(oddTree)
	crcs := func(_ context.Context, name, _ string) (uint32, bool) {
		return crc32.ChecksumIEEE([]byte(s[name])), true
	}
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, f := range []Format{Tar, Zip} {
		t.Run(string(f), func(t *testing.T) {
			opt := Options{CRC32: crcs}
			entries := Walk(ctx, s, "", "top", listing.Config{}, nil)
			p, err := Measure(ctx, f, entries, opt)
			if err != nil {
				t.Fatal(err)
			}
			var all bytes.Buffer
			if err := Write(ctx, &all, p, entries, s, opt); err != nil {
				t.Fatal(err)
			}
			whole := all.Bytes()
			if int64(len(whole)) != p.Size {
				t.Fatalf("wrote %d bytes, measured %d", len(whole), p.Size)
			}
			got, _ := read(t, f, whole)
			for name, content := range oddTree {
				if got["top/"+name] != content {
					t.Errorf("%s: %q", name, tail(got["top/"+name]))
				}
			}
			var buf bytes.Buffer
			for _, start := range starts(whole, rng) {
				if !p.Ranges(start) {
					t.Fatalf("no range from %d with every CRC-32 known", start)
				}
				for _, n := range []int64{p.Size - start, 1 + rng.Int64N(min(600, p.Size-start))} {
					buf.Reset()
					if err := WriteRange(ctx, &buf, p, entries, s, start, n, opt); err != nil {
						t.Fatalf("range %d+%d: %v", start, n, err)
					}
					if !bytes.Equal(buf.Bytes(), whole[start:start+n]) {
						t.Fatalf("range %d+%d differs from the whole archive's bytes (first difference at +%d)", start, n, firstDiff(buf.Bytes(), whole[start:start+n]))
					}
				}
			}
		})
	}
}

// starts are the offsets of whole to start ranges at: on and either side
// of every boundary between pieces (tar blocks; zip records, found by
// their signatures; the first and last byte of each file's data), and
// some at random.
func starts(whole []byte, rng *rand.Rand) []int64 {
	var at []int64
	for i := int64(0); i <= int64(len(whole)); i += tarBlock {
		at = append(at, i)
	}
	for _, sig := range []string{"PK\x03\x04", "PK\x07\x08", "PK\x01\x02", "PK\x05\x06", "PK\x06\x06", "PK\x06\x07"} {
		for i := 0; ; {
			j := bytes.Index(whole[i:], []byte(sig))
			if j < 0 {
				break
			}
			at = append(at, int64(i+j))
			i += j + 1
		}
	}
	for _, content := range oddTree {
		if i := bytes.Index(whole, []byte(content)); content != "" && i >= 0 {
			at = append(at, int64(i), int64(i+len(content)))
		}
	}
	seen := map[int64]bool{}
	var out []int64
	add := func(i int64) {
		if i >= 0 && i < int64(len(whole)) && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	for _, i := range at {
		for d := int64(-1); d <= 1; d++ {
			add(i + d)
		}
	}
	for range 30 {
		add(rng.Int64N(int64(len(whole))))
	}
	return out
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRangeOpensOnlyItsFiles checks that a range opens only the files
// whose bytes it holds: a range in the last file's data opens one file,
// and one in the tar's trailer or the zip's central directory none.
func TestRangeOpensOnlyItsFiles(t *testing.T) {
	s, _, crcs := oddStore(t)
	ctx := context.Background()
	for _, f := range []Format{Tar, Zip} {
		opt := Options{CRC32: crcs}
		entries := Walk(ctx, s, "", "top", listing.Config{}, nil)
		p, err := Measure(ctx, f, entries, opt)
		if err != nil {
			t.Fatal(err)
		}
		var all bytes.Buffer
		Write(ctx, &all, p, entries, s, opt)
		// The last file by name, byte by byte, is ünï/名前.txt.
		last := int64(bytes.LastIndex(all.Bytes(), []byte("unicode")))
		for _, c := range []struct {
			start, n int64
			opens    int32
		}{
			{last + 4, 3, 1},
			{last + 7, p.Size - last - 7, 0}, // what follows the last file's data
			{p.Size - 1, 1, 0},
		} {
			s.opened.Store(0)
			var buf bytes.Buffer
			if err := WriteRange(ctx, &buf, p, entries, s, c.start, c.n, opt); err != nil {
				t.Fatal(err)
			}
			if got := s.opened.Load(); got != c.opens || !bytes.Equal(buf.Bytes(), all.Bytes()[c.start:c.start+c.n]) {
				t.Errorf("%s: range %d+%d opened %d files (want %d), bytes equal %v", f, c.start, c.n, got, c.opens, bytes.Equal(buf.Bytes(), all.Bytes()[c.start:c.start+c.n]))
			}
		}
	}
}

// TestZipRangesNeedCRCs: a zip range may start past a file's first byte
// only when that file's CRC-32 is known; up to the data of the first file
// without one, it may. The bytes are the same whichever way the CRC-32s
// come, and so is the ETag.
func TestZipRangesNeedCRCs(t *testing.T) {
	s, _, crcs := oddStore(t)
	ctx := context.Background()
	entries := Walk(ctx, s, "", "top", listing.Config{}, nil)
	all, err := Measure(ctx, Zip, entries, Options{CRC32: crcs})
	if err != nil {
		t.Fatal(err)
	}
	none, err := Measure(ctx, Zip, entries, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// "b511" is the first file by name; "b512" the second.
	noB512 := func(ctx context.Context, name, etag string) (uint32, bool) {
		if name == "b512" {
			return 0, false
		}
		return crcs(ctx, name, etag)
	}
	some, err := Measure(ctx, Zip, entries, Options{CRC32: noB512})
	if err != nil {
		t.Fatal(err)
	}
	if all.ETag != none.ETag || all.ETag != some.ETag || all.Size != none.Size {
		t.Fatalf("ETags %s %s %s, sizes %d %d", all.ETag, none.ETag, some.ETag, all.Size, none.Size)
	}
	var whole, computed bytes.Buffer
	Write(ctx, &whole, all, entries, s, Options{CRC32: crcs})
	Write(ctx, &computed, none, entries, s, Options{})
	if !bytes.Equal(whole.Bytes(), computed.Bytes()) {
		t.Fatal("a zip with kept CRC-32s differs from one with computed CRC-32s")
	}
	b := whole.Bytes()
	b511 := int64(bytes.Index(b, []byte(strings.Repeat("a", 511))))
	b512 := int64(bytes.Index(b, []byte(strings.Repeat("b", 512))))
	for _, c := range []struct {
		p     Plan
		start int64
		want  bool
	}{
		{none, 0, true}, {none, b511, true}, {none, b511 + 1, false}, {none, all.Size - 1, false},
		{some, b512, true}, {some, b512 + 1, false},
		{all, all.Size - 1, true}, {all, all.Size, false}, {all, -1, false},
	} {
		if got := c.p.Ranges(c.start); got != c.want {
			t.Errorf("Ranges(%d) = %v; want %v", c.start, got, c.want)
		}
	}
	// A range that starts before every unknown CRC-32 computes them as
	// their bytes pass.
	var buf bytes.Buffer
	if err := WriteRange(ctx, &buf, some, entries, s, b512-7, all.Size-b512+7, Options{CRC32: noB512}); err != nil || !bytes.Equal(buf.Bytes(), b[b512-7:]) {
		t.Errorf("range from before the unknown CRC-32: %v, equal %v", err, bytes.Equal(buf.Bytes(), b[b512-7:]))
	}
	if err := WriteRange(ctx, io.Discard, some, entries, s, b512+1, 10, Options{CRC32: noB512}); err == nil {
		t.Error("a range past a file whose CRC-32 is unknown was written")
	}
	// The record vanished between Measure and the write: the range stops.
	buf.Reset()
	if err := WriteRange(ctx, &buf, all, entries, s, b512+1, all.Size-b512-1, Options{CRC32: noB512}); err == nil || buf.Len() >= int(all.Size-b512-1) {
		t.Errorf("a CRC-32 gone before the write: %v, %d bytes", err, buf.Len())
	}
}

// TestETag: the ETag is the same for the same folder, and changes with
// anything the bytes depend on: a file's content (its ETag), a name, a
// time, the format; a tar.zst's is weak.
func TestETag(t *testing.T) {
	s, dir, _ := oddStore(t)
	ctx := context.Background()
	etag := func(f Format) string {
		t.Helper()
		p, err := Measure(ctx, f, Walk(ctx, s, "", "top", listing.Config{}, nil), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p.ETag
	}
	tarTag, zipTag, zstTag := etag(Tar), etag(Zip), etag(TarZst)
	if tarTag == zipTag || !strings.HasPrefix(zstTag, `W/"`) || !strings.HasPrefix(tarTag, `"`) || etag(Tar) != tarTag {
		t.Fatalf("ETags: tar %s, zip %s, tar.zst %s", tarTag, zipTag, zstTag)
	}
	seen := map[string]string{"start": tarTag}
	change := func(what string, do func()) {
		t.Helper()
		do()
		got := etag(Tar)
		if prev, ok := seen[got]; ok || got == tarTag {
			t.Errorf("%s: ETag %s as after %q", what, got, prev)
		}
		seen[got] = what
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	p := filepath.Join(dir, "b512")
	change("content", func() { os.WriteFile(p, []byte(strings.Repeat("B", 512)), 0o644); os.Chtimes(p, old, old) })
	change("time", func() { os.Chtimes(p, old, old.Add(time.Second)) })
	change("name", func() { os.Rename(p, filepath.Join(dir, "b512x")) })
	change("new empty folder", func() { os.Mkdir(filepath.Join(dir, "d", "e", "new"), 0o755) })
}

// TestRangeOfChangedFolder changes the folder between Measure and
// WriteRange, before, inside and after the range: the range never comes
// out whole.
func TestRangeOfChangedFolder(t *testing.T) {
	ctx := context.Background()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, f := range []Format{Tar, Zip} {
		for _, c := range []struct {
			what   string
			change func(dir string)
		}{
			// The same size and second: the same headers; only the
			// file's ETag tells.
			{"a file before the range, same size and second", func(dir string) {
				p := filepath.Join(dir, "b511")
				os.WriteFile(p, []byte(strings.Repeat("A", 511)), 0o644)
				os.Chtimes(p, old, old.Add(time.Millisecond))
			}},
			{"a file after the range, same size and second", func(dir string) {
				p := filepath.Join(dir, "z-last")
				os.WriteFile(p, []byte("THE LAST FILE"), 0o644)
				os.Chtimes(p, old, old.Add(time.Millisecond))
			}},
			{"a name after the range, same length", func(dir string) {
				os.Rename(filepath.Join(dir, "z-last"), filepath.Join(dir, "z-lost"))
			}},
			{"a new file after the range", func(dir string) {
				os.WriteFile(filepath.Join(dir, "zz"), nil, 0o644)
			}},
		} {
			s, dir, crcs := oddStore(t)
			for _, name := range []string{"b511", "z-last"} {
				os.Chtimes(filepath.Join(dir, name), old, old)
			}
			opt := Options{CRC32: crcs}
			entries := Walk(ctx, s, "", "top", listing.Config{}, nil)
			p, err := Measure(ctx, f, entries, opt)
			if err != nil {
				t.Fatal(err)
			}
			var all bytes.Buffer
			Write(ctx, &all, p, entries, s, opt)
			start := int64(bytes.Index(all.Bytes(), []byte("d/b1024")))
			n := int64(2000)
			c.change(dir)
			var buf bytes.Buffer
			err = WriteRange(ctx, &buf, p, entries, s, start, n, opt)
			if !errors.Is(err, ErrChanged) || int64(buf.Len()) >= n {
				t.Errorf("%s, %s: %d of %d bytes, %v; want fewer and ErrChanged", f, c.what, buf.Len(), n, err)
			}
			buf.Reset()
			if err := Write(ctx, &buf, p, entries, s, opt); !errors.Is(err, ErrChanged) || int64(buf.Len()) >= p.Size {
				t.Errorf("%s, %s, whole: %d of %d bytes, %v; want fewer and ErrChanged", f, c.what, buf.Len(), p.Size, err)
			}
		}
	}
}

func TestNoRangeOfTarZst(t *testing.T) {
	s, _, _ := oddStore(t)
	ctx := context.Background()
	entries := Walk(ctx, s, "", "top", listing.Config{}, nil)
	p, err := Measure(ctx, TarZst, entries, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Ranges(0) || p.Size != -1 {
		t.Fatalf("tar.zst: Ranges(0) %v, Size %d", p.Ranges(0), p.Size)
	}
	if err := WriteRange(ctx, io.Discard, p, entries, s, 0, 10, Options{}); err == nil {
		t.Error("a range of a tar.zst was written")
	}
}

// sampler takes a whole archive's bytes and keeps only those of some
// windows, passing over a file's other bytes by seeking, so that an
// archive of many gigabytes is checked without reading them.
type sampler struct {
	pos     int64
	windows [][2]int64 // [start, end)
	kept    map[int64][]byte
}

func newSampler(windows [][2]int64) *sampler {
	return &sampler{windows: windows, kept: map[int64][]byte{}}
}

func (s *sampler) Write(p []byte) (int, error) {
	for _, w := range s.windows {
		lo, hi := max(w[0], s.pos), min(w[1], s.pos+int64(len(p)))
		if lo < hi {
			s.kept[w[0]] = append(s.kept[w[0]], p[lo-s.pos:hi-s.pos]...)
		}
	}
	s.pos += int64(len(p))
	return len(p), nil
}

// ReadFrom takes a file's bytes (an io.LimitedReader of a seekable file,
// as the archive passes them), reading only what a window holds.
func (s *sampler) ReadFrom(r io.Reader) (int64, error) {
	lr := r.(*io.LimitedReader)
	f := lr.R.(io.ReadSeeker)
	var total int64
	for lr.N > 0 {
		next := s.pos + lr.N // the end, unless a window starts before
		for _, w := range s.windows {
			if w[1] > s.pos && w[0] < next {
				next = max(w[0], s.pos)
			}
		}
		if next > s.pos { // no window here: pass by seeking
			if _, err := f.Seek(next-s.pos, io.SeekCurrent); err != nil {
				return total, err
			}
			total, lr.N, s.pos = total+next-s.pos, lr.N-(next-s.pos), next
			continue
		}
		end := s.pos + lr.N
		for _, w := range s.windows {
			if w[0] <= s.pos && w[1] > s.pos {
				end = min(end, w[1])
			}
		}
		buf := make([]byte, end-s.pos)
		if _, err := io.ReadFull(f, buf); err != nil {
			return total, err
		}
		lr.N -= int64(len(buf))
		total += int64(len(buf))
		s.Write(buf)
	}
	return total, nil
}

// TestRangesPast8GiB makes a sparse file past 8 GiB, whose tar header
// needs a PAX size and whose zip records need zip64 fields, between small
// files, and checks ranges around every boundary of it against the same
// bytes of the whole archive, which is sampled without reading the
// gigabytes.
func TestRangesPast8GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an archive of 8 GiB is walked whole several times")
	}
	dir := t.TempDir()
	const big = 8<<30 + 5
	bigPath := filepath.Join(dir, "m-big.img")
	f, err := os.Create(bigPath)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("first bytes"), 0)
	f.WriteAt([]byte("8 GiB here"), 8<<30-5)
	f.WriteAt([]byte("last"), big-4)
	f.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(bigPath, &st); err != nil || st.Blocks*512 > 1<<30 {
		testenv.Missing(t, "a filesystem with sparse files for the temporary folder (an 8 GiB file took %d blocks)", st.Blocks)
	}
	os.WriteFile(filepath.Join(dir, "a-small"), []byte("small before"), 0o644)
	os.WriteFile(filepath.Join(dir, "z-small"), []byte("small after"), 0o644)
	crcs := func(_ context.Context, name, _ string) (uint32, bool) {
		switch name {
		case "m-big.img":
			return 0x1234abcd, true // not read: the bytes are the same either way
		case "a-small":
			return crc32.ChecksumIEEE([]byte("small before")), true
		case "z-small":
			return crc32.ChecksumIEEE([]byte("small after")), true
		}
		return 0, false
	}
	ds, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	ctx := context.Background()
	for _, format := range []Format{Tar, Zip} {
		t.Run(string(format), func(t *testing.T) {
			opt := Options{CRC32: crcs}
			entries := Walk(ctx, ds, "", "top", listing.Config{}, nil)
			p, err := Measure(ctx, format, entries, opt)
			if err != nil {
				t.Fatal(err)
			}
			// Where the big file's data starts: after the headers of the
			// top folder, a-small and the big file itself.
			head := headerEnd(t, format, p, entries, ds, opt)
			var windows [][2]int64
			seen := map[int64]bool{}
			for _, at := range []int64{0, head - 700, head - 513, head - 1, head, head + 1, head + 8<<30 - 6, head + big - 1, head + big, head + big + 3, p.Size - 1500, p.Size - 100, p.Size - 22, p.Size - 1} {
				if at = max(at, 0); !seen[at] {
					seen[at] = true
					windows = append(windows, [2]int64{at, min(at+1200, p.Size)})
				}
			}
			smp := newSampler(windows)
			if err := Write(ctx, smp, p, entries, ds, opt); err != nil {
				t.Fatal(err)
			}
			if smp.pos != p.Size {
				t.Fatalf("wrote %d bytes, measured %d", smp.pos, p.Size)
			}
			for _, w := range windows {
				var buf bytes.Buffer
				if err := WriteRange(ctx, &buf, p, entries, ds, w[0], w[1]-w[0], opt); err != nil {
					t.Fatalf("range %d-%d: %v", w[0], w[1], err)
				}
				if !bytes.Equal(buf.Bytes(), smp.kept[w[0]]) {
					t.Errorf("range %d-%d (%d past the big file's data) differs from the whole archive's bytes at +%d", w[0], w[1], w[0]-head, firstDiff(buf.Bytes(), smp.kept[w[0]]))
				}
				if w[0] == head && !bytes.HasPrefix(buf.Bytes(), []byte("first bytes")) {
					t.Errorf("the big file's data does not start at %d: %q", head, buf.Bytes()[:20])
				}
			}
			if format == Tar {
				// The tar's own reader finds the big file's size in it.
				var buf bytes.Buffer
				WriteRange(ctx, &buf, p, entries, ds, 0, head, opt)
				tr := tar.NewReader(io.MultiReader(&buf, strings.NewReader(strings.Repeat("\x00", 512))))
				var h *tar.Header
				for h, err = tr.Next(); err == nil && h.Name != "top/m-big.img"; h, err = tr.Next() {
				}
				if err != nil || h.Size != big {
					t.Errorf("tar header of the big file: %v, %v", h, err)
				}
			}
		})
	}
}

// headerEnd finds where the big file's data starts: the first byte of the
// whole archive that holds "first bytes", looked for in its first
// kilobytes.
func headerEnd(t *testing.T, format Format, p Plan, entries iter.Seq2[Entry, error], s largo.Store, opt Options) int64 {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteRange(context.Background(), &buf, p, entries, s, 0, 8<<10, opt); err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(buf.Bytes(), []byte("first bytes"))
	if i < 0 {
		t.Fatalf("%s: the big file's first bytes are not in the first 8 KiB", format)
	}
	return int64(i)
}

// TestSampler checks the test's own sampler against a plain copy.
func TestSampler(t *testing.T) {
	data := []byte(strings.Repeat("0123456789abcdef", 100))
	windows := [][2]int64{{0, 3}, {10, 40}, {35, 50}, {1590, 1600}}
	smp := newSampler(windows)
	smp.Write(data[:5])
	f, _ := os.CreateTemp(t.TempDir(), "s")
	f.Write(data[5:])
	f.Seek(0, io.SeekStart)
	if _, err := smp.ReadFrom(io.LimitReader(f, int64(len(data)-5))); err != nil {
		t.Fatal(err)
	}
	for _, w := range windows {
		if got := string(smp.kept[w[0]]); got != string(data[w[0]:w[1]]) {
			t.Errorf("window %v: %q", w, got)
		}
	}
	if smp.pos != int64(len(data)) {
		t.Errorf("at %d", smp.pos)
	}
}

package listing

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"unsafe"

	"largo"
)

// Sizes of the Sorter's memory.
const (
	chunkSize = 64 << 10  // an arena chunk; also the longest record
	step      = 256 << 10 // what is taken from the budget at a time
	runBuffer = 16 << 10  // the read buffer of one run while merging, and the spill writer's
	maxFanIn  = 128       // most runs merged at once
	minFanIn  = 2
	firstOffs = 1024 // the first capacity of the index
)

// Sorter collects entries and gives them back in order. Make one with
// Config.NewSorter, Add every entry, then range over All once, and Close
// it (Close may come at any time, and more than once).
type Sorter struct {
	cfg  Config
	cmp  Compare
	max  int64
	held int64 // taken from the budget

	chunks  [][]byte // the arena; chunks[:used] hold records
	used    int
	offs    []uint32 // chunk<<16 | offset, of every record in the arena
	offsMem []byte   // the memory of offs
	n       int      // entries added

	spill *os.File
	w     *bufio.Writer
	end   int64 // bytes written to spill
	runs  []run

	sorted bool
	err    error
}

// run is a sorted run in the spill file.
type run struct{ off, len int64 }

// NewSorter returns a Sorter ordering by cmp, holding the first step of
// its memory; ErrBusy when the budget has none left.
func (c Config) NewSorter(cmp Compare) (*Sorter, error) {
	most := c.Max
	if most <= 0 {
		most = DefaultMax
	}
	s := &Sorter{cfg: c, cmp: cmp, max: max(most, step)}
	if !s.take(step) {
		return nil, ErrBusy
	}
	return s, nil
}

// take grows what s holds to at least n bytes, in steps, within its
// maximum and the budget: the first step from anywhere in the budget,
// the next ones only while they leave room for other listings to start.
func (s *Sorter) take(n int64) bool {
	for s.held < n {
		if s.held+step > s.max {
			return false
		}
		if s.held == 0 && !s.cfg.Budget.TryTake(step) || s.held > 0 && !s.cfg.Budget.TryGrow(step) {
			return false
		}
		s.held += step
	}
	return true
}

// footprint is the memory s holds in buffers now.
func (s *Sorter) footprint() int64 {
	n := int64(len(s.chunks))*chunkSize + int64(cap(s.offs))*4
	if s.w != nil {
		n += runBuffer
	}
	return n
}

// Len returns the number of entries added.
func (s *Sorter) Len() int { return s.n }

// Add adds an entry.
func (s *Sorter) Add(in largo.Info) error {
	if s.err != nil {
		return s.err
	}
	if s.sorted {
		return errors.New("listing: Add after All")
	}
	need := recordLen(&in)
	if need > maxRecord || len(in.Name) > 0xffff || len(in.ETag) > 0xffff || len(in.ContentType) > 0xffff {
		return fmt.Errorf("%w: %.64q", errTooLong, in.Name)
	}
	if !s.room(need) {
		if err := s.spillRun(); err != nil {
			return s.fail(err)
		}
		if !s.room(need) {
			return s.fail(errors.New("listing: no room after a spill")) // cannot happen: a chunk is free
		}
	}
	c := s.used - 1
	off := len(s.chunks[c])
	s.chunks[c] = appendRecord(s.chunks[c], &in)
	s.offs = append(s.offs, uint32(c)<<16|uint32(off))
	s.n++
	return nil
}

// room makes room for a record of need bytes and one more index slot,
// within the memory s may hold; false when a run must be spilled first.
func (s *Sorter) room(need int) bool {
	if len(s.offs) == cap(s.offs) {
		grown := max(firstOffs, 2*cap(s.offs))
		if !s.take(s.footprint() + int64(grown-cap(s.offs))*4) {
			return false
		}
		s.growOffs(grown)
	}
	if s.used > 0 && len(s.chunks[s.used-1])+need <= chunkSize {
		return true
	}
	if s.used < len(s.chunks) { // reuse a chunk after a spill
		s.chunks[s.used] = s.chunks[s.used][:0]
		s.used++
		return true
	}
	if len(s.chunks) >= 1<<16 || !s.take(s.footprint()+chunkSize) {
		return false
	}
	s.chunks = append(s.chunks, alloc(chunkSize)[:0])
	s.used++
	return true
}

// growOffs gives the index a capacity of n entries.
func (s *Sorter) growOffs(n int) {
	mem := alloc(n * 4)
	offs := unsafe.Slice((*uint32)(unsafe.Pointer(&mem[0])), n)[:len(s.offs)]
	copy(offs, s.offs)
	if s.offsMem != nil {
		free(s.offsMem)
	}
	s.offs, s.offsMem = offs, mem
}

// freeMemory gives the arena and the index back to the system.
func (s *Sorter) freeMemory() {
	for _, c := range s.chunks {
		free(c)
	}
	if s.offsMem != nil {
		free(s.offsMem)
	}
	s.chunks, s.offs, s.offsMem, s.used = nil, nil, nil, 0
}

// record returns the record at index entry o.
func (s *Sorter) record(o uint32) []byte {
	c := s.chunks[o>>16][o&0xffff:]
	return c[:fullLen(c)]
}

// sortArena sorts the index of the records in the arena.
func (s *Sorter) sortArena() {
	var a, b Item
	slices.SortFunc(s.offs, func(x, y uint32) int {
		decodeItem(s.record(x), &a)
		decodeItem(s.record(y), &b)
		return s.cmp(&a, &b)
	})
}

// spillRun sorts the arena, writes it to the spill file as a run, and
// empties it, keeping its memory for the next run.
func (s *Sorter) spillRun() error {
	if len(s.offs) == 0 {
		return nil
	}
	s.sortArena()
	if s.spill == nil {
		f, err := os.CreateTemp(s.cfg.Dir, "largo-listing-*")
		if err != nil {
			return err
		}
		// Gone from the folder at once: only the descriptor holds it.
		os.Remove(f.Name())
		s.spill = f
		s.w = bufio.NewWriterSize(f, runBuffer)
	}
	start := s.end
	for _, o := range s.offs {
		rec := s.record(o)
		if _, err := s.w.Write(rec); err != nil {
			return err
		}
		s.end += int64(len(rec))
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	s.runs = append(s.runs, run{off: start, len: s.end - start})
	s.offs = s.offs[:0]
	s.used = 0
	return nil
}

// All yields the entries in order, each with strings of its own. It may
// be ranged over once; an error ends it.
func (s *Sorter) All() iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		m, err := s.finish()
		if err != nil {
			yield(largo.Info{}, err)
			return
		}
		if m == nil {
			for _, o := range s.offs {
				if !yield(decodeInfo(s.record(o)), nil) {
					return
				}
			}
			return
		}
		for {
			rec, err := m.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(largo.Info{}, s.fail(err))
				return
			}
			if !yield(decodeInfo(rec), nil) {
				return
			}
		}
	}
}

// finish ends adding: it sorts the arena when everything is in it, and
// returns nil; otherwise it spills the rest, frees the arena, merges the
// runs down to what one merge can take, and returns that merge.
func (s *Sorter) finish() (*merger, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.sorted {
		return nil, s.fail(errors.New("listing: All ranged over twice"))
	}
	s.sorted = true
	if len(s.runs) == 0 {
		s.sortArena()
		// Nothing more will be added: keep only what the arena uses, for
		// the listings that stay open while others run (an archive's
		// folders on the way down).
		s.keep(s.footprint())
		return nil, nil
	}
	if err := s.spillRun(); err != nil {
		return nil, s.fail(err)
	}
	s.freeArena()
	if err := s.mergeDown(); err != nil {
		return nil, s.fail(err)
	}
	m, err := s.merger(s.runs)
	if err != nil {
		return nil, s.fail(err)
	}
	return m, nil
}

// freeArena drops the arena once everything is on disk, and gives back
// what merging will not need.
func (s *Sorter) freeArena() {
	s.freeMemory()
	s.keep(max(step, int64(min(len(s.runs), maxFanIn))*runBuffer+runBuffer))
}

// keep gives back what s holds beyond n bytes.
func (s *Sorter) keep(n int64) {
	if s.held > n {
		s.cfg.Budget.Give(s.held - n)
		s.held = n
	}
}

// fanIn is how many runs s may merge at once with what it holds, keeping
// room for the writer of an intermediate pass.
func (s *Sorter) fanIn() int {
	return int(max(minFanIn, min(maxFanIn, s.held/runBuffer-1)))
}

// mergeDown merges runs, fanIn at a time, into longer runs at the end of
// the spill file, until one merge can take them all.
func (s *Sorter) mergeDown() error {
	for len(s.runs) > s.fanIn() {
		k := s.fanIn()
		m, err := s.merger(s.runs[:k])
		if err != nil {
			return err
		}
		start := s.end
		for {
			rec, err := m.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if _, err := s.w.Write(rec); err != nil {
				return err
			}
			s.end += int64(len(rec))
		}
		if err := s.w.Flush(); err != nil {
			return err
		}
		s.runs = append(s.runs[k:], run{off: start, len: s.end - start})
	}
	return nil
}

func (s *Sorter) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return s.err
}

// Close gives back the memory and removes the temporary file.
func (s *Sorter) Close() error {
	if s.held > 0 {
		s.cfg.Budget.Give(s.held)
		s.held = 0
	}
	s.freeMemory()
	s.w = nil
	if s.err == nil {
		s.err = errors.New("listing: closed")
	}
	if s.spill != nil {
		err := s.spill.Close()
		s.spill = nil
		return err
	}
	return nil
}

// List returns a Sorter holding the entries of the folder name of st
// that keep accepts (all, when keep is nil), ordered by cmp. The caller
// must Close it. ctx ends a long listing early.
func (c Config) List(ctx context.Context, st largo.Store, name string, cmp Compare, keep func(largo.Info) bool) (*Sorter, error) {
	s, err := c.NewSorter(cmp)
	if err != nil {
		return nil, err
	}
	n := 0
	for in, err := range st.List(ctx, name) {
		if err == nil {
			if n++; n%1024 == 0 {
				err = ctx.Err()
			}
		}
		if err == nil && (keep == nil || keep(in)) {
			err = s.Add(in)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Resort returns the entries of s that keep accepts, visited in s's
// order, as a Sorter ordering by cmp; s is used up, and closed unless it
// is what is returned (a listing that fitted in memory is sorted again
// in place). The caller must Close the result.
func (s *Sorter) Resort(cmp Compare, keep func(largo.Info) bool) (*Sorter, error) {
	if s.err != nil {
		return nil, s.err
	}
	if len(s.runs) == 0 && !s.sorted {
		s.sortArena()
		kept := s.offs[:0]
		for _, o := range s.offs {
			if keep(decodeInfo(s.record(o))) {
				kept = append(kept, o)
			}
		}
		s.offs, s.n, s.cmp = kept, len(kept), cmp
		return s, nil
	}
	defer s.Close()
	m, err := s.finish()
	if err != nil {
		return nil, err
	}
	// What the merge of s holds counts against the same listing.
	c := s.cfg
	if c.Max <= 0 {
		c.Max = DefaultMax
	}
	c.Max = max(step, c.Max-s.held)
	t, err := c.NewSorter(cmp)
	if err != nil {
		return nil, err
	}
	for {
		rec, err := m.next()
		if err == io.EOF {
			return t, nil
		}
		if err == nil {
			if in := decodeInfo(rec); keep(in) {
				err = t.Add(in)
			}
		}
		if err != nil {
			t.Close()
			return nil, err
		}
	}
}

// merger merges sorted runs.
type merger struct {
	s    *Sorter
	heap []*cursor
	out  []byte // the record last returned
}

// cursor reads one run.
type cursor struct {
	r   *bufio.Reader
	rec []byte
	it  Item
}

func (s *Sorter) merger(runs []run) (*merger, error) {
	m := &merger{s: s}
	for _, r := range runs {
		c := &cursor{r: bufio.NewReaderSize(io.NewSectionReader(s.spill, r.off, r.len), runBuffer), rec: make([]byte, 0, 256)}
		switch err := c.advance(); err {
		case nil:
			m.heap = append(m.heap, c)
		case io.EOF:
		default:
			return nil, err
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return m, nil
}

// advance reads the cursor's next record.
func (c *cursor) advance() error {
	c.rec = c.rec[:hdrLen]
	if _, err := io.ReadFull(c.r, c.rec); err != nil {
		if err == io.ErrUnexpectedEOF {
			return errors.New("listing: spill file cut short")
		}
		return err
	}
	n := fullLen(c.rec)
	c.rec = slices.Grow(c.rec, n-hdrLen)[:n]
	if _, err := io.ReadFull(c.r, c.rec[hdrLen:]); err != nil {
		return errors.New("listing: spill file cut short")
	}
	decodeItem(c.rec, &c.it)
	return nil
}

// next returns the smallest record left, valid until the next call, or
// io.EOF.
func (m *merger) next() ([]byte, error) {
	if len(m.heap) == 0 {
		return nil, io.EOF
	}
	top := m.heap[0]
	// The record is copied out before its cursor moves on.
	m.out = append(m.out[:0], top.rec...)
	switch err := top.advance(); err {
	case nil:
	case io.EOF:
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	default:
		return nil, err
	}
	if len(m.heap) > 0 {
		m.down(0)
	}
	return m.out, nil
}

func (m *merger) less(i, j int) bool {
	return m.s.cmp(&m.heap[i].it, &m.heap[j].it) < 0
}

func (m *merger) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(m.heap) {
			return
		}
		small := l
		if r := l + 1; r < len(m.heap) && m.less(r, l) {
			small = r
		}
		if !m.less(small, i) {
			return
		}
		m.heap[i], m.heap[small] = m.heap[small], m.heap[i]
		i = small
	}
}

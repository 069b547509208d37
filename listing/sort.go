package listing

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"unsafe"

	"largo"
)

// Sizes of the Sorter's memory.
const (
	chunkSize = 64 << 10  // an arena chunk; also the longest record
	maxChunks = 1 << 16   // the most chunks an offset can name
	step      = 256 << 10 // what is taken from the budget at a time
	runBuffer = 16 << 10  // the read buffer of one run while merging, and the spill writer's
	maxFanIn  = 128       // most runs merged at once
	minFanIn  = 2
	firstOffs = 1024 // the first capacity of the index
	entSize   = int(unsafe.Sizeof(ent{}))
)

// ent is the index entry of a record in the arena: where it is, and what
// a NameOrder compares first, the leading bytes of its name and whether
// it is a folder, so that most comparisons read neither record.
type ent struct {
	key uint64 // the name's first 8 bytes, big-endian, zero-padded
	off uint32 // chunk<<16 | offset
	dir uint32 // 1 for a folder
}

// nameKey returns the first 8 bytes of name as a number that orders as
// they do: names whose keys differ are ordered by their keys; names
// whose keys are equal must be compared whole.
func nameKey(name string) uint64 {
	var b [8]byte
	copy(b[:], name)
	return binary.BigEndian.Uint64(b[:])
}

// Sorter collects entries and gives them back in order. Make one with
// Config.NewSorter, Add every entry, then range over All once, and Close
// it (Close may come at any time, and more than once).
type Sorter struct {
	cfg   Config
	order Order
	names NameOrder // the order, when it is a NameOrder
	byKey bool      // order is names: compare the index, not the records
	max   int64
	held  int64 // taken from the budget

	arena  []byte   // reserved for the records, touched as chunks are used
	chunks [][]byte // slices of arena; chunks[:used] hold records
	used   int
	idx    []ent  // every record in the arena
	idxMem []byte // reserved for idx
	n      int    // entries added
	a, b   Item   // the two items a comparison decodes

	spill *os.File
	w     *bufio.Writer
	end   int64 // bytes written to spill
	runs  []run

	sorted bool
	err    error
}

// run is a sorted run in the spill file.
type run struct{ off, len int64 }

// NewSorter returns a Sorter ordering by order, holding the first step
// of its memory; ErrBusy when the budget has none left.
func (c Config) NewSorter(order Order) (*Sorter, error) {
	most := c.Max
	if most <= 0 {
		most = DefaultMax
	}
	s := &Sorter{cfg: c, max: max(most, step)}
	s.setOrder(order)
	if !s.take(step) {
		return nil, ErrBusy
	}
	return s, nil
}

// setOrder makes order the order of s.
func (s *Sorter) setOrder(order Order) {
	s.order = order
	s.names, s.byKey = order.(NameOrder)
}

// take grows what s holds to at least n bytes, in steps, within its
// maximum and the budget: the first step from anywhere in the budget,
// the next ones only while they leave room for other listings to start.
func (s *Sorter) take(n int64) bool {
	for s.held < n {
		if s.held+step > s.max {
			return false
		}
		if s.held == 0 && !s.cfg.Budget.TryTake(step, s.cfg.Client...) || s.held > 0 && !s.cfg.Budget.TryGrow(step, s.cfg.Client...) {
			return false
		}
		s.held += step
	}
	return true
}

// footprint is the memory s holds in buffers now.
func (s *Sorter) footprint() int64 {
	n := int64(len(s.chunks))*chunkSize + int64(cap(s.idx))*int64(entSize)
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
	e := ent{key: nameKey(in.Name), off: uint32(c)<<16 | uint32(off)}
	if in.IsDir {
		e.dir = 1
	}
	s.idx = append(s.idx, e)
	s.n++
	return nil
}

// room makes room for a record of need bytes and one more index slot,
// within the memory s may hold; false when a run must be spilled first.
func (s *Sorter) room(need int) bool {
	if len(s.idx) == cap(s.idx) {
		grown := max(firstOffs, 2*cap(s.idx))
		if int(s.max) < grown*entSize || !s.take(s.footprint()+int64(grown-cap(s.idx))*int64(entSize)) {
			return false
		}
		s.growIndex(grown)
	}
	if s.used > 0 && len(s.chunks[s.used-1])+need <= chunkSize {
		return true
	}
	if s.used < len(s.chunks) { // reuse a chunk after a spill
		s.chunks[s.used] = s.chunks[s.used][:0]
		s.used++
		return true
	}
	if s.arena == nil {
		s.arena = alloc(int(min(s.max, maxChunks*chunkSize)+chunkSize-1) / chunkSize * chunkSize)
	}
	at := len(s.chunks) * chunkSize
	if at+chunkSize > len(s.arena) || !s.take(s.footprint()+chunkSize) {
		return false
	}
	s.chunks = append(s.chunks, s.arena[at:at:at+chunkSize])
	s.used++
	return true
}

// growIndex gives the index a capacity of n entries, in its reserved
// memory of s.max bytes, which must hold them.
func (s *Sorter) growIndex(n int) {
	if s.idxMem == nil {
		s.idxMem = alloc(int(s.max))
	}
	s.idx = unsafe.Slice((*ent)(unsafe.Pointer(&s.idxMem[0])), n)[:len(s.idx)]
}

// freeMemory gives the arena and the index back to the system.
func (s *Sorter) freeMemory() {
	if s.arena != nil {
		free(s.arena)
	}
	if s.idxMem != nil {
		free(s.idxMem)
	}
	s.arena, s.chunks, s.idx, s.idxMem, s.used = nil, nil, nil, nil, 0
}

// record returns the record at o, an index entry's offset.
func (s *Sorter) record(o uint32) []byte {
	c := s.chunks[o>>16][o&0xffff:]
	return c[:fullLen(c)]
}

// sortArena sorts the index of the records in the arena.
func (s *Sorter) sortArena() {
	if s.byKey {
		slices.SortFunc(s.idx, s.compareKeys)
		return
	}
	slices.SortFunc(s.idx, func(x, y ent) int {
		decodeItem(s.record(x.off), &s.a)
		decodeItem(s.record(y.off), &s.b)
		return s.order.Compare(&s.a, &s.b)
	})
}

// compareKeys orders two records of the arena by a NameOrder, from their
// index entries while their keys differ.
func (s *Sorter) compareKeys(x, y ent) int {
	if s.names == DirsFirst && x.dir != y.dir {
		return int(y.dir) - int(x.dir)
	}
	if x.key != y.key {
		return cmp.Compare(x.key, y.key)
	}
	return strings.Compare(recordName(s.record(x.off)), recordName(s.record(y.off)))
}

// compareNames orders two records by a NameOrder.
func (s *Sorter) compareNames(a, b []byte) int {
	if s.names == DirsFirst && a[0]&flagDir != b[0]&flagDir {
		if a[0]&flagDir != 0 {
			return -1
		}
		return 1
	}
	return strings.Compare(recordName(a), recordName(b))
}

// spillRun sorts the arena, writes it to the spill file as a run, and
// empties it, keeping its memory for the next run.
func (s *Sorter) spillRun() error {
	if len(s.idx) == 0 {
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
	for _, e := range s.idx {
		rec := s.record(e.off)
		if _, err := s.w.Write(rec); err != nil {
			return err
		}
		s.end += int64(len(rec))
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	s.runs = append(s.runs, run{off: start, len: s.end - start})
	s.idx = s.idx[:0]
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
			for _, e := range s.idx {
				if !yield(decodeInfo(s.record(e.off)), nil) {
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
		s.cfg.Budget.Give(s.held-n, s.cfg.Client...)
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
		s.cfg.Budget.Give(s.held, s.cfg.Client...)
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
// that keep accepts (all, when keep is nil), ordered by order. The
// caller must Close it. ctx ends a long listing early.
func (c Config) List(ctx context.Context, st largo.Store, name string, order Order, keep func(largo.Info) bool) (*Sorter, error) {
	s, err := c.NewSorter(order)
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
func (s *Sorter) Resort(order Order, keep func(largo.Info) bool) (*Sorter, error) {
	if s.err != nil {
		return nil, s.err
	}
	if len(s.runs) == 0 && !s.sorted {
		s.sortArena()
		kept := s.idx[:0]
		for _, e := range s.idx {
			if keep(decodeInfo(s.record(e.off))) {
				kept = append(kept, e)
			}
		}
		s.idx, s.n = kept, len(kept)
		s.setOrder(order)
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
	t, err := c.NewSorter(order)
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
	r      *bufio.Reader
	rec    []byte
	it     Item // rec decoded, for an Order that is not a NameOrder
	decode bool
}

func (s *Sorter) merger(runs []run) (*merger, error) {
	m := &merger{s: s}
	for _, r := range runs {
		c := &cursor{r: bufio.NewReaderSize(io.NewSectionReader(s.spill, r.off, r.len), runBuffer), rec: make([]byte, 0, 256), decode: !s.byKey}
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
	if c.decode {
		decodeItem(c.rec, &c.it)
	}
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
	a, b := m.heap[i], m.heap[j]
	if m.s.byKey {
		return m.s.compareNames(a.rec, b.rec) < 0
	}
	return m.s.order.Compare(&a.it, &b.it) < 0
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

package links

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
)

// memState is a state area in memory that counts the reads of records.
type memState struct {
	mu    sync.Mutex
	m     map[string][]byte
	reads int
}

func (s *memState) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	b, ok := s.m[key]
	if !ok {
		return nil, largo.ErrNotFound
	}
	return b, nil
}

func (s *memState) Put(_ context.Context, key string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = b
	return nil
}

func (s *memState) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

func (s *memState) List(_ context.Context, prefix string) iter.Seq2[largo.Record, error] {
	return func(yield func(largo.Record, error) bool) {
		s.mu.Lock()
		var keys []string
		for k := range s.m {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		s.mu.Unlock()
		for _, k := range keys {
			if !yield(largo.Record{Key: k}, nil) {
				return
			}
		}
	}
}

func (s *memState) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// TestCacheAtCap: with more links met than the cache holds, the links
// met last are still answered from memory (the least recently used
// went, not everything at once); one forgotten is read again.
func TestCacheAtCap(t *testing.T) {
	st := &memState{m: map[string][]byte{}}
	c := newClock()
	ls := New(Config{State: st, Key: []byte(strings.Repeat("k", 32)), Now: c.now})
	ctx := context.Background()
	ids := make([]string, cacheMax+50)
	for i := range ids {
		_, l, err := ls.Make(ctx, Link{Kind: File, Path: "f", Expires: c.now().Add(time.Hour)}, "")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = l.ID
	}
	before := st.readCount()
	for _, id := range ids[len(ids)-1000:] {
		if _, err := ls.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.readCount() - before; n != 0 {
		t.Errorf("the 1000 links made last: %d read from the state area; want all from memory", n)
	}
	if _, err := ls.Get(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := st.readCount() - before; n != 1 {
		t.Errorf("the link made first, past the cache's bound: %d reads; want 1", n)
	}
	// Past CacheTTL, a record is read again: another instance may have
	// revoked it.
	c.add(CacheTTL)
	st.Delete(ctx, linkPrefix+ids[len(ids)-1])
	if _, err := ls.Get(ctx, ids[len(ids)-1]); !errors.Is(err, ErrRevoked) {
		t.Errorf("a link removed elsewhere, past CacheTTL: %v; want ErrRevoked", err)
	}
}

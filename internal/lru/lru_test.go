package lru

import (
	"fmt"
	"sync"
	"testing"
)

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](3)
	c.Add("a", 1)
	c.Add("b", 2)
	c.Add("c", 3)
	c.Get("a") // b is now the least recently used
	c.Add("d", 4)
	if _, ok := c.Get("b"); ok {
		t.Error("b kept; want it forgotten")
	}
	for k, want := range map[string]int{"a": 1, "c": 3, "d": 4} {
		if v, ok := c.Get(k); !ok || v != want {
			t.Errorf("%s = %d, %v; want %d", k, v, ok, want)
		}
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d", c.Len())
	}
	// Peek does not save an entry from eviction.
	c.Peek("a")
	c.Add("e", 5)
	c.Add("f", 6)
	c.Add("g", 7)
	if _, ok := c.Peek("a"); ok {
		t.Error("a kept after three more adds")
	}
}

func TestFullNeverClears(t *testing.T) {
	c := New[int, int](100)
	for i := range 10000 {
		c.Add(i, i)
		if c.Len() > 100 {
			t.Fatalf("Len %d past its bound", c.Len())
		}
		if i >= 100 && c.Len() != 100 {
			t.Fatalf("Len %d after %d adds: a full cache lost more than one entry", c.Len(), i+1)
		}
	}
	for i := 9900; i < 10000; i++ {
		if _, ok := c.Get(i); !ok {
			t.Fatalf("%d, among the last hundred, forgotten", i)
		}
	}
}

func TestUpdateAndRemoveFunc(t *testing.T) {
	c := New[string, int](10)
	c.Update("n", func(old int, ok bool) (int, bool) { return old + 1, true })
	c.Update("n", func(old int, ok bool) (int, bool) { return old + 1, ok })
	if v, _ := c.Get("n"); v != 2 {
		t.Errorf("n = %d; want 2", v)
	}
	c.Update("n", func(int, bool) (int, bool) { return 0, false })
	if _, ok := c.Get("n"); ok {
		t.Error("n kept after an update that drops it")
	}
	for i := range 5 {
		c.Add(fmt.Sprint("dir/", i), i)
		c.Add(fmt.Sprint("other/", i), i)
	}
	c.RemoveFunc(func(k string, _ int) bool { return len(k) > 4 && k[:4] == "dir/" })
	if c.Len() != 5 {
		t.Errorf("Len after RemoveFunc = %d; want 5", c.Len())
	}
}

func TestConcurrent(t *testing.T) {
	c := New[int, int](64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				c.Add(g*10000+i, i)
				c.Get(g*10000 + i/2)
				if i%7 == 0 {
					c.Remove(g*10000 + i)
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() > 64 {
		t.Errorf("Len %d past its bound", c.Len())
	}
}

func TestSizedForgetsByWeight(t *testing.T) {
	c := NewSized[string, []byte](100, 10, func(b []byte) int64 { return int64(len(b)) })
	c.Add("a", make([]byte, 4))
	c.Add("b", make([]byte, 4))
	c.Get("a") // b is now the least recently used
	c.Add("c", make([]byte, 4))
	if _, ok := c.Peek("b"); ok {
		t.Error("b kept past the budget; want it forgotten")
	}
	if _, ok := c.Peek("a"); !ok {
		t.Error("a forgotten; want only the least recently used to go")
	}
	if w := c.Weight(); w != 8 {
		t.Errorf("Weight = %d, want 8", w)
	}
	// A value heavier than the whole budget is not kept, and pushes
	// nothing out.
	c.Add("huge", make([]byte, 11))
	if _, ok := c.Peek("huge"); ok || c.Len() != 2 {
		t.Errorf("huge kept (%v), %d entries; want it refused and 2 left", ok, c.Len())
	}
	// A value that grows past the budget goes; one that shrinks is
	// weighed again.
	c.Update("a", func([]byte, bool) ([]byte, bool) { return make([]byte, 1), true })
	if w := c.Weight(); w != 5 {
		t.Errorf("Weight after a shrink = %d, want 5", w)
	}
	c.Add("a", make([]byte, 12))
	if _, ok := c.Peek("a"); ok {
		t.Error("a kept once heavier than the budget")
	}
	c.Remove("c")
	c.RemoveFunc(func(string, []byte) bool { return true })
	if w, n := c.Weight(), c.Len(); w != 0 || n != 0 {
		t.Errorf("after removing all: weight %d, %d entries", w, n)
	}
}

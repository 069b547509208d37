package ingest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"largo"
	"largo/wire"
)

// fakeHooks refuses uploads whose name begins with "no", answers
// metadata to the others, and keeps the events it is told of.
type fakeHooks struct {
	mu     sync.Mutex
	asked  []Upload
	events []Event
}

func (h *fakeHooks) Admit(_ context.Context, u Upload) (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, u)
	if strings.HasPrefix(u.Name, "no") {
		return nil, wire.Refuse(403, "not this one")
	}
	return map[string]string{"k": u.Name}, nil
}

func (h *fakeHooks) Notify(_ context.Context, e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// told returns the events as "type name [from]" lines.
func (h *fakeHooks) told() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		s := e.Type + " " + e.Name
		if e.From != "" {
			s += " from " + e.From
		}
		out = append(out, s)
	}
	return out
}

// TestHooksTold: the pre-upload hook is asked of a write and of a copy,
// its refusal stops the write before anything is stored, its answer
// reaches the committed event; removals, expiries and moves (by rename
// and by copies) are told once each, and a move's copies are told as no
// upload or commit of their own.
func TestHooksTold(t *testing.T) {
	s, dir := newStore(t, map[string]string{"d/a": "a", "d/b": "bb", "f": "ff"})
	h := &fakeHooks{}
	p := New(Config{Store: s, Hooks: h})
	ctx := context.Background()

	if _, err := p.Begin(ctx, Target{Name: "no.txt", Size: 1, Protocol: "put"}); err == nil {
		t.Fatal("a refused upload began")
	} else if code, reason := wire.Status(err); code != 403 || reason != "not this one" {
		t.Errorf("refusal %d %q", code, reason)
	}
	if got := read(t, dir, "no.txt"); !strings.HasPrefix(got, "<") {
		t.Errorf("a refused upload stored %q", got)
	}
	w, err := p.Begin(ctx, Target{Name: "yes.txt", Size: 3, Protocol: "put", Metadata: map[string]string{"filetype": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	w.ReadFrom(strings.NewReader("abc"))
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.BeginCopy(ctx, Target{Name: "no-copy", Size: 2}, "f"); err == nil {
		t.Error("a refused copy began")
	}
	p.Removed(ctx, "f", largo.Info{Size: 2})
	p.Expired(ctx, "gone", largo.Info{})
	p.Forget(ctx, "replaced") // no deletion: nothing told
	p.Renamed(ctx, "x", "y")
	if err := p.MoveByCopy(ctx, noCopy{s}, "d", "e", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"committed yes.txt", "deleted f", "expired gone", "moved y from x", "moved e from d"}
	if got := h.told(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("told %q\nwant %q", got, want)
	}
	e := h.events[0]
	if e.Info.Size != 3 || string(e.SHA256) != string(sumOf("abc")) || e.Protocol != "put" || e.Metadata["k"] != "yes.txt" {
		t.Errorf("committed event %+v", e)
	}
	if m := h.events[4]; !m.Info.IsDir {
		t.Errorf("the move of a folder told as %+v", m)
	}
	var asked []string
	for _, u := range h.asked {
		asked = append(asked, u.Name)
	}
	if want := []string{"no.txt", "yes.txt", "no-copy"}; fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("the hook was asked of %q; want %q (never of a move's copies)", asked, want)
	}
	if u := h.asked[1]; u.Size != 3 || u.Protocol != "put" || u.Metadata["filetype"] != "x" {
		t.Errorf("asked %+v", u)
	}
	if got := read(t, dir, "e/b"); got != "bb" {
		t.Errorf("e/b holds %q", got)
	}
}

// changesTold keeps the names Changes is told of.
type changesTold struct {
	mu    sync.Mutex
	names []string
}

func (c *changesTold) Changed(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, name)
}

func (c *changesTold) told() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.names...)
}

// TestChangesTold: every commit, removal and move is told to Changes
// before it returns (what keeps files for reads forgets them there), a
// move by copies with both names of each file and folder, and a refused
// or aborted write tells nothing.
func TestChangesTold(t *testing.T) {
	s, _ := newStore(t, map[string]string{"d/a": "a", "f": "ff"})
	c := &changesTold{}
	p := New(Config{Store: s, Changes: c})
	ctx := context.Background()

	w, err := p.Begin(ctx, Target{Name: "new.txt", Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	w.ReadFrom(strings.NewReader("abc"))
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.told(); fmt.Sprint(got) != "[new.txt]" {
		t.Fatalf("after a commit, told %q", got)
	}
	w, err = p.Begin(ctx, Target{Name: "aborted", Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, err := p.Begin(ctx, Target{Name: "f", Size: 1, Cond: largo.Condition{IfNoneMatch: true}}); err == nil {
		t.Fatal("a refused write began")
	}
	p.Removed(ctx, "f", largo.Info{Size: 2})
	p.Expired(ctx, "gone", largo.Info{})
	p.Renamed(ctx, "x", "y")
	if err := p.MoveByCopy(ctx, noCopy{s}, "d", "e", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"new.txt", "f", "gone", "x", "y", "e/a", "d/a", "e/a", "d", "e"}
	if got := c.told(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("told %q\nwant %q", got, want)
	}
}

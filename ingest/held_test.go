package ingest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"largo"
	"largo/record"
	"largo/wire"
)

// bytesQuota is a quota of limit bytes for every write: enough of
// package quota's contract to see what the pipeline holds.
type bytesQuota struct {
	mu    sync.Mutex
	limit int64
	held  int64
}

func (q *bytesQuota) Admit(context.Context, string, int64, bool, *largo.Info) (Claim, error) {
	return &bytesClaim{q: q}, nil
}

func (q *bytesQuota) AdmitBytes(context.Context, string) (Claim, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held >= q.limit {
		return nil, &largo.QuotaError{Quota: "test", Limit: q.limit, Used: q.held}
	}
	return &bytesClaim{q: q}, nil
}

func (q *bytesQuota) KeepBeside(context.Context, string, int64) error { return nil }
func (q *bytesQuota) FolderMade(context.Context, string)              {}
func (q *bytesQuota) Carried(context.Context, string, string)         {}
func (q *bytesQuota) Forget(context.Context, string)                  {}
func (q *bytesQuota) Renamed(context.Context, string, string)         {}
func (q *bytesQuota) AdmitMove(context.Context, string, string) error { return nil }

func (q *bytesQuota) holding() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}

type bytesClaim struct {
	q    *bytesQuota
	held int64
	done bool
}

func (c *bytesClaim) Grow(n int64) error {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	if c.q.held+n > c.q.limit {
		return &largo.QuotaError{Quota: "test", Limit: c.q.limit, Used: c.q.held}
	}
	c.q.held += n
	c.held += n
	return nil
}

func (c *bytesClaim) Commit(context.Context, largo.Info, bool, *record.File) { c.Release() }

func (c *bytesClaim) Release() {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	if !c.done {
		c.q.held -= c.held
		c.done = true
	}
}

// staged reads a chunk through the pipeline's admission as a staging
// would, and returns what it stored and why it stopped.
func staged(t *testing.T, h *Held, at, size int64, body string) (int64, error) {
	t.Helper()
	c, err := h.Chunk(context.Background(), at, size, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer c.End()
	n, err := io.Copy(io.Discard, c)
	if err != nil {
		t.Fatalf("a chunk's read failed: %v (it must end at io.EOF)", err)
	}
	return n, c.Err()
}

func statusOf(err error) int {
	if err == nil {
		return 0
	}
	code, _ := wire.Status(err)
	return code
}

// TestHeldChunks: the chunks of an upload whose length is not known are
// held to the size limit, the free space above the reserve and the
// quotas as they arrive: one announced past them is refused before a
// byte is read, one of unknown size stops where they end, and what the
// upload staged stays held until it is released.
func TestHeldChunks(t *testing.T) {
	d, _ := newStore(t, nil)
	q := &bytesQuota{limit: 1000}
	p := New(Config{Store: spaceStore{d, 10_000}, Reserve: 2_000, MaxSize: 5_000, Quota: q})
	ctx := context.Background()
	h, err := p.Hold(ctx, "f", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		what      string
		at, size  int64
		body      string
		stored    int64
		code      int
		holdAfter int64
	}{
		{"a chunk that fits", 0, 600, strings.Repeat("a", 600), 600, 0, 600},
		{"announced past the quota", 600, 500, strings.Repeat("b", 500), 0, 507, 600},
		{"unknown size, cut at the quota", 600, -1, strings.Repeat("c", 500), 0, 507, 600},
		{"unknown size that fits", 600, -1, strings.Repeat("d", 300), 300, 0, 900},
	} {
		n, err := staged(t, h, tt.at, tt.size, tt.body)
		if n != tt.stored || statusOf(err) != tt.code || q.holding() != tt.holdAfter {
			t.Errorf("%s: stored %d, %v (%d), held %d; want %d, %d, held %d", tt.what, n, err, statusOf(err), q.holding(), tt.stored, tt.code, tt.holdAfter)
		}
	}
	// Another upload finds the room the first one holds taken.
	h2, err := p.Hold(ctx, "g", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := staged(t, h2, 0, 200, strings.Repeat("e", 200)); n != 0 || statusOf(err) != 507 {
		t.Errorf("a second upload past what the first holds: %d, %v; want 507", n, err)
	}
	h.Release()
	h.Release()
	if q.holding() != 0 {
		t.Errorf("%d bytes held after the release", q.holding())
	}
	if _, err := h.Chunk(ctx, 900, 1, strings.NewReader("x")); err == nil {
		t.Error("a chunk of a released upload was admitted")
	}
	if n, err := staged(t, h2, 0, 200, strings.Repeat("e", 200)); n != 200 || err != nil {
		t.Errorf("the second upload once the first let go: %d, %v", n, err)
	}
	h2.Release()

	// The size limit, the staged bytes counted; and the space above the
	// reserve, announced or not.
	q.limit = 1 << 40
	h, err = p.Hold(ctx, "big", 4_500)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if _, err := h.Chunk(ctx, 4_500, 501, strings.NewReader("")); statusOf(err) != http.StatusRequestEntityTooLarge {
		t.Errorf("announced past the limit: %v; want 413", err)
	}
	if n, err := staged(t, h, 4_500, -1, strings.Repeat("f", 600)); n != 0 || statusOf(err) != 413 {
		t.Errorf("unknown size past the limit: %d, %v; want 413 and nothing stored", n, err)
	}
	if _, err := p.Hold(ctx, "over", 5_001); statusOf(err) != 413 {
		t.Errorf("an upload holding more than the limit already: %v; want 413", err)
	}
	h3, _ := p.Hold(ctx, "space", 0)
	defer h3.Release()
	if c, err := h3.Chunk(ctx, 0, 4_000, strings.NewReader("")); err != nil {
		t.Errorf("announced within the space above the reserve: %v", err)
	} else {
		c.End()
	}
	p.cfg.Store = spaceStore{d, 5_000}
	p.space = spaceStore{d, 5_000}
	if _, err := h3.Chunk(ctx, 0, 3_001, strings.NewReader("")); !errors.Is(err, largo.ErrNoSpace) {
		t.Errorf("announced past the space above the reserve: %v; want ErrNoSpace", err)
	}
	// The space promised to a chunk in flight is taken from the others'.
	c, err := h3.Chunk(ctx, 0, 2_000, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckChunk(ctx, "other", 0, 1_500); !errors.Is(err, largo.ErrNoSpace) {
		t.Errorf("a check while 2,000 of 3,000 bytes are promised: %v; want ErrNoSpace", err)
	}
	c.End()
	if err := p.CheckChunk(ctx, "other", 0, 1_500); err != nil {
		t.Errorf("a check once the chunk ended: %v", err)
	}
	if err := p.CheckChunk(ctx, "other", 4_000, 1_001); statusOf(err) != 413 {
		t.Errorf("a check past the limit: %v; want 413", err)
	}
}

// TestHeldBodyError: a body that fails ends the chunk at io.EOF, with
// its error kept, so that a staging stores what came before.
func TestHeldBodyError(t *testing.T) {
	d, _ := newStore(t, nil)
	p := New(Config{Store: d})
	h, err := p.Hold(context.Background(), "f", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	broken := errors.New("connection reset")
	c, err := h.Chunk(context.Background(), 0, -1, io.MultiReader(strings.NewReader("abc"), &failing{broken}))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, c)
	if n != 3 || err != nil || !errors.Is(c.Err(), broken) {
		t.Errorf("copied %d, %v, Err %v; want 3 bytes, no error, Err the body's", n, err, c.Err())
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

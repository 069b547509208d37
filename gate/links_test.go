package gate

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestLinkMaxRateKept: a link's bandwidth cap is part of its record, read
// back by every instance (here a second Links on the same state area,
// with nothing cached).
func TestLinkMaxRateKept(t *testing.T) {
	f := newFixture(t, Within)
	ctx := context.Background()
	key := []byte(strings.Repeat("k", 32))
	_, made, err := f.gate.Links().Make(ctx, Link{Kind: LinkFolder, Path: "pub", Maker: "bob", Expires: f.now.Add(time.Hour), MaxRate: 5e6}, "")
	if err != nil {
		t.Fatal(err)
	}
	other := NewLinks(f.disk.State(), key, func() time.Time { return f.now })
	l, err := other.Get(ctx, made.ID)
	if err != nil {
		t.Fatal(err)
	}
	if l.MaxRate != 5e6 {
		t.Errorf("MaxRate %d read back; want 5000000", l.MaxRate)
	}
	ext, err := other.Extend(ctx, made.ID, "bob", false, f.now.Add(2*time.Hour))
	if err != nil || ext.MaxRate != 5e6 {
		t.Errorf("extended link: MaxRate %d, %v; want it kept", ext.MaxRate, err)
	}
}

package quota_test

import (
	"context"
	"strings"
	"testing"

	"largo/auth"
)

// TestAdmitMoveBelow: a move is admitted against every quota at or below
// its destination: into a parent of a quota path, it brings what lies at
// that path's place in the folder moved.
func TestAdmitMoveBelow(t *testing.T) {
	f := newFixture(t, policy{paths: []auth.Quota{{Path: "pub/z/deep", Bytes: 2000}, {Path: "pub/y", Files: 1}}})
	a := as("bob")
	for name, size := range map[string]int{"pub/staging/deep/big": 3000, "pub/staging/top": 10, "pub/small/deep/s": 100, "pub/two/a": 1, "pub/two/b": 1} {
		if err := f.put(a, name, strings.Repeat("x", size), false); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	wantQuotaErr(t, f.pl.CheckMove(ctx, "pub/staging", "pub/z"), "quota of /pub/z/deep: 2 KiB, 0 B used")
	wantQuotaErr(t, f.pl.CheckMove(ctx, "pub/staging/deep", "pub/z/deep"), "quota of /pub/z/deep")
	wantQuotaErr(t, f.pl.CheckMove(ctx, "pub/two", "pub/y"), "quota of /pub/y: 1 files")
	for _, ok := range [][2]string{
		{"pub/small", "pub/z"},              // 100 bytes land under deep
		{"pub/staging", "pub/w"},            // no quota there
		{"pub/staging/top", "pub/z/top"},    // beside deep, not under it
		{"pub/staging/deep/big", "pub/big"}, // out of every quota
	} {
		if err := f.pl.CheckMove(ctx, ok[0], ok[1]); err != nil {
			t.Errorf("move %s to %s: %v", ok[0], ok[1], err)
		}
	}
}

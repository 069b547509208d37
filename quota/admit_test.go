package quota_test

import (
	"strings"
	"testing"

	"largo/auth"
	"largo/quota"
)

// TestAdmitBytes: a resumable upload's bytes are held as they are
// staged, against its owner's quota and its paths', with no file counted;
// a chunk refused takes nothing, and what was held goes at the release.
func TestAdmitBytes(t *testing.T) {
	f := newFixture(t, policy{
		users: map[string]auth.Quota{"alice": {Bytes: 1000, Files: 2}},
		paths: []auth.Quota{{Path: "up", Bytes: 5000}},
	})
	a := as("alice")
	if err := f.put(a, "up/old", strings.Repeat("x", 900), false); err != nil {
		t.Fatal(err)
	}
	c, err := f.k.AdmitBytes(a, "up/new")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Grow(60); err != nil {
		t.Fatal(err)
	}
	wantQuotaErr(t, c.Grow(50), "quota of user alice: 1000 B, 960 B used")
	// The refusal took nothing: the room left is still 40 bytes.
	if err := c.Grow(40); err != nil {
		t.Fatalf("40 more bytes after a refusal: %v", err)
	}
	// Other writes see what it holds, and it counts no file.
	wantQuotaErr(t, f.put(a, "up/x", "y", false), "quota of user alice: 1000 B, 1000 B used")
	if _, err := f.k.AdmitBytes(a, "up/other"); err == nil {
		t.Error("a second upload admitted with no room left")
	}
	held := func(name string) quota.Usage {
		for _, l := range f.k.Report() {
			if l.Name() == name {
				return l.Held
			}
		}
		return quota.Usage{}
	}
	if h := held("user alice"); h != (quota.Usage{Bytes: 100}) {
		t.Errorf("alice holds %+v; want 100 bytes and no file", h)
	}
	if h := held("/up"); h != (quota.Usage{Bytes: 100}) {
		t.Errorf("/up holds %+v; want 100 bytes and no file", h)
	}
	c.Release()
	c.Release()
	if h := held("user alice"); h != (quota.Usage{}) {
		t.Errorf("after the release alice holds %+v", h)
	}
	if err := f.put(a, "up/x", "y", false); err != nil {
		t.Errorf("a write once the upload let go: %v", err)
	}
}

package dav

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/auth"
	"largo/disk"
	"largo/ingest"
	"largo/quota"
)

// testerQuota gives the tests' user a quota of 1,000 bytes in 3 files.
type testerQuota struct{}

func (testerQuota) UserQuota(u string) (auth.Quota, bool) {
	return auth.Quota{Bytes: 1000, Files: 3}, u == "tester"
}
func (testerQuota) PathQuotas() []auth.Quota { return nil }

// propPatch is a PROPPATCH body setting the property name to value.
func propPatch(name, value string) string {
	return fmt.Sprintf(`<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:%s xmlns:Z="urn:x">%s</Z:%s></D:prop></D:set></D:propertyupdate>`, name, value, name)
}

// TestPropsAndFoldersCount: dead properties count against their setter's
// quota (a PROPPATCH past it changes nothing and answers 507 with the
// quota named), a property's value is bounded (413), and a folder made
// counts as one file.
func TestPropsAndFoldersCount(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := quota.New(quota.Config{Store: st, State: st.State(), Policy: func() quota.Policy { return testerQuota{} }})
	srv, _, _ := newServerWith(t, dir, ingest.Config{Quota: k})
	find := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`
	code, answer := do(t, "PROPPATCH", srv.URL+"/f.txt", propPatch("big", strings.Repeat("v", 2000)))
	if code != 207 || !strings.Contains(answer, "507 Insufficient Storage") || !strings.Contains(answer, "quota of user tester") {
		t.Errorf("a property of 2,000 bytes under a quota of 1,000: %d %.400s; want 207 with 507 naming the quota", code, answer)
	}
	if _, found := do(t, "PROPFIND", srv.URL+"/f.txt", find, "Depth", "0"); strings.Contains(found, "<big ") {
		t.Error("the property refused was recorded")
	}
	if code, answer := do(t, "PROPPATCH", srv.URL+"/f.txt", propPatch("small", strings.Repeat("v", 500))); code != 207 || !strings.Contains(answer, "200 OK") {
		t.Fatalf("a property that fits: %d %.300s", code, answer)
	}
	if code, answer := do(t, "PROPPATCH", srv.URL+"/f.txt", propPatch("more", strings.Repeat("v", 500))); code != 207 || !strings.Contains(answer, "507") {
		t.Errorf("a second property past the quota: %d %.300s; want 507", code, answer)
	}
	code, answer = do(t, "PROPPATCH", srv.URL+"/f.txt", propPatch("huge", strings.Repeat("v", MaxPropSize+1)))
	if code != 413 || !strings.Contains(answer, "a property's value too large") {
		t.Errorf("a property over MaxPropSize: %d %.200q; want 413", code, answer)
	}
	// Folders: three fill the files quota, the fourth is refused.
	for i := range 4 {
		want := 201
		if i == 3 {
			want = 507
		}
		if code, answer := do(t, "MKCOL", srv.URL+fmt.Sprintf("/d%d", i), ""); code != want {
			t.Errorf("MKCOL of folder %d: %d %q; want %d", i, code, answer, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "d3")); err == nil {
		t.Error("the folder refused was made")
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShareCommand: largo share makes a link on the store's record, lists
// it, extends it and revokes it; a damaged share key is an error that
// says so, not "no key".
func TestShareCommand(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "a.txt"), []byte("a"), 0o644)
	share := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(context.Background(), append([]string{"share", "--dir", dir, "--url", "http://127.0.0.1:9"}, args...), quietEnv(&out, &errs))
		return out.String() + errs.String(), err
	}
	link, err := share("/docs")
	if err != nil || !strings.HasPrefix(link, "http://127.0.0.1:9/_largo/s/v2.") {
		t.Fatalf("largo share /docs: %q, %v", link, err)
	}
	id := strings.Split(strings.TrimPrefix(strings.TrimSpace(link), "http://127.0.0.1:9/_largo/s/"), ".")[1]
	if list, err := share("--list"); err != nil || !strings.Contains(list, id) || !strings.Contains(list, "(operator)") {
		t.Errorf("--list: %q, %v", list, err)
	}
	if out, err := share("--extend", id, "--expires", "48h"); err != nil || !strings.Contains(out, "now expires") {
		t.Errorf("--extend: %q, %v", out, err)
	}
	if out, err := share("--revoke", id); err != nil || !strings.Contains(out, "revoked") {
		t.Errorf("--revoke: %q, %v", out, err)
	}
	if list, _ := share("--list"); strings.Contains(list, id) {
		t.Errorf("a revoked link still listed: %q", list)
	}
	if _, err := share("--revoke", "nope"); err == nil {
		t.Error("--revoke of no link: no error")
	}
	if _, err := share("/docs", "--max-upload", "1MiB"); err == nil {
		t.Error("--max-upload without --write: no error")
	}
	os.WriteFile(filepath.Join(dir, ".largo", "share.key"), []byte("short"), 0o600)
	if out, err := share("/docs"); err == nil || !strings.Contains(err.Error()+out, "damaged") {
		t.Errorf("a damaged share key: %q, %v", out, err)
	}
}

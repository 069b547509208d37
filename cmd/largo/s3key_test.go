package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestS3Key: largo s3key prints a key the access file takes, and with
// --access lists each user's key IDs, never a secret.
func TestS3Key(t *testing.T) {
	var out, errb bytes.Buffer
	e := quietEnv(&out, &errb)
	if err := run(context.Background(), []string{"s3key"}, e); err != nil {
		t.Fatalf("s3key: %v %s", err, errb.String())
	}
	line := strings.TrimSpace(out.String())
	if !strings.HasPrefix(line, "s3_keys = [{ id = ") {
		t.Fatalf("s3key printed %q", line)
	}
	access := filepath.Join(t.TempDir(), "access.toml")
	text := "[[user]]\nname = \"alice\"\n" + line + "\n"
	if err := os.WriteFile(access, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"s3key", "--access", access, "--user", "alice"}, e); err != nil {
		t.Fatalf("s3key --access: %v %s", err, errb.String())
	}
	id := strings.Split(line, `"`)[1]
	secret := strings.Split(line, `"`)[3]
	if got := out.String(); got != "alice "+id+"\n" || strings.Contains(got, secret) {
		t.Errorf("s3key --access printed %q", got)
	}
}

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"largo/disk"
)

// TestHooksDeadCommands: largo hooks dead lists a folder's dead letters;
// retry and drop want --id or --all, refuse an unknown id, and change
// the outbox.
func TestHooksDeadCommands(t *testing.T) {
	dir := t.TempDir()
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const id, key = "0123456789abcdef0123456789abcdef", "18eee1622caeac57-0123456789abcdef0123456789abcdef-3a"
	letter := `{"body":{"id":"` + id + `","type":"deleted","name":"gone.txt"},"parked":"2026-03-01T10:00:00Z","status":400,"reason":"refused 5 times","tries":5}`
	for _, k := range []string{key, "18eee1622caeac58-fedcba9876543210fedcba9876543210-3a"} {
		if err := st.State().Put(context.Background(), "hooks/dead/"+k, []byte(strings.ReplaceAll(letter, id, k[17:49]))); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	out, stderr, err := runCLI(t, "hooks", "dead", dir)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "gone.txt") || !strings.Contains(out, "refused 5 times") {
		t.Fatalf("largo hooks dead: %v\n%s%s", err, out, stderr)
	}
	for _, args := range [][]string{{"hooks", "drop", dir}, {"hooks", "retry", dir, "--id", id, "--all"}} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("largo %s: no error without exactly one of --id and --all", strings.Join(args, " "))
		}
	}
	if out, _, err := runCLI(t, "hooks", "drop", dir, "--id", "nosuchid"); err == nil || !strings.Contains(err.Error(), "nosuchid") || !strings.Contains(out, "0 dead letters") {
		t.Errorf("drop of an unknown id: %v, %q", err, out)
	}
	if out, _, err := runCLI(t, "hooks", "retry", dir, "--id", id); err != nil || !strings.Contains(out, "1 dead letters put back") {
		t.Fatalf("retry: %v, %q", err, out)
	}
	if out, _, err := runCLI(t, "hooks", "drop", dir, "--all"); err != nil || !strings.Contains(out, "1 dead letters dropped") {
		t.Fatalf("drop --all: %v, %q", err, out)
	}
	out, _, err = runCLI(t, "hooks", "dead", dir, "--json")
	var left []any
	if err != nil || json.Unmarshal([]byte(out), &left) != nil || len(left) != 0 {
		t.Errorf("largo hooks dead --json after all were retried or dropped: %v, %q", err, out)
	}
	st, err = disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if b, err := st.State().Get(context.Background(), "hooks/outbox/"+key); err != nil || !strings.Contains(string(b), `"name":"gone.txt"`) {
		t.Errorf("the retried event in the outbox: %q, %v", b, err)
	}
}

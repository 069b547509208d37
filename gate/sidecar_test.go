package gate

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"largo"
	"largo/links"
)

// TestDropBoxSidecarNames: a drop box does not write NAME.gz, NAME.br or
// NAME.zst beside a file NAME, whether NAME is there when the write is
// decided or comes while its bytes arrive (Landed takes it back); it
// writes them where no NAME is, and ordinary names beside NAME; a user
// with write on NAME writes them anywhere.
func TestDropBoxSidecarNames(t *testing.T) {
	f := newFixture(t, Within)
	_, l, err := f.gate.Links().Make(as(Server()), links.Link{Kind: links.Drop, Path: "inbox", Maker: "bob", Expires: f.now.Add(time.Hour), MaxUpload: 1000}, "")
	if err != nil {
		t.Fatal(err)
	}
	drop, bob := as(LinkHolder(l.ID)), as(User("bob"))
	for _, name := range []string{"inbox/old.txt.gz", "inbox/old.txt.br", "inbox/old.txt.zst"} {
		if _, err := f.store.CheckWrite(drop, name, 3, largo.Condition{}); !errors.Is(err, largo.ErrSidecarName) {
			t.Errorf("a drop box's %s beside inbox/old.txt: %v; want ErrSidecarName", name, err)
		}
		if _, err := f.store.Create(drop, name, largo.CreateOptions{Size: 3}); !errors.Is(err, largo.ErrSidecarName) {
			t.Errorf("a drop box created %s beside inbox/old.txt: %v", name, err)
		}
		if _, err := f.store.CheckWrite(bob, name, 3, largo.Condition{}); err != nil {
			t.Errorf("bob, who may replace inbox/old.txt, refused %s: %v", name, err)
		}
	}
	for _, name := range []string{"inbox/backup.tar.gz", "inbox/old.txt.bak", "inbox/old.txt.gz.old"} {
		if _, err := f.store.CheckWrite(drop, name, 3, largo.Condition{}); err != nil {
			t.Errorf("a drop box refused %s: %v", name, err)
		}
	}

	// NAME comes while the drop box's NAME.gz is written: the file that
	// landed is taken back.
	put := func(name string) largo.Info {
		t.Helper()
		u, err := f.store.Create(drop, name, largo.CreateOptions{Size: 3})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(u, "gz!")
		in, _, err := u.Commit(drop, largo.Condition{})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	late := put("inbox/late.txt.gz")
	if err := os.WriteFile(filepath.Join(f.dir, "inbox", "late.txt"), []byte("late"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Landed(drop, "inbox/late.txt.gz", late); !errors.Is(err, largo.ErrSidecarName) {
		t.Errorf("Landed of a drop box's late.txt.gz after late.txt came: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "inbox", "late.txt.gz")); !os.IsNotExist(err) {
		t.Errorf("the drop box's late.txt.gz stayed beside late.txt: %v", err)
	}
	// Alone, it stays; and a user's is never taken back.
	alone := put("inbox/alone.txt.gz")
	if err := f.store.Landed(drop, "inbox/alone.txt.gz", alone); err != nil {
		t.Errorf("Landed of a lone alone.txt.gz: %v", err)
	}
	if err := f.store.Landed(bob, "inbox/old.txt.gz", largo.Info{ETag: `"x"`}); err != nil {
		t.Errorf("Landed of bob's file: %v", err)
	}
}

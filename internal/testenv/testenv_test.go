package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper ended it instead of
// ending the running test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatal(args ...any)            { r.fatal = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }
func (r *recorder) Skip(args ...any)             { r.skip = fmt.Sprint(args...) }

func TestProgramFound(t *testing.T) {
	r := &recorder{}
	p := Program(r, "largo-no-such-program", "sh")
	if p == "" || !strings.HasSuffix(p, "/sh") || r.fatal != "" || r.skip != "" {
		t.Errorf("Program(no such, sh) = %q, fatal %q, skip %q; want the path of sh", p, r.fatal, r.skip)
	}
}

func TestMissingSkipsOrFails(t *testing.T) {
	for _, strict := range []string{"", "1"} {
		t.Run("strict="+strict, func(t *testing.T) {
			t.Setenv(StrictVar, strict)
			r := &recorder{}
			if p := Program(r, "largo-no-such-program"); p != "" {
				t.Errorf("found %q", p)
			}
			got, other := r.skip, r.fatal
			want := "SKIPPED, NOT TESTED: largo-no-such-program not found"
			if strict == "1" {
				got, other = r.fatal, r.skip
				want = StrictVar + "=1: largo-no-such-program not found"
			}
			if !strings.HasPrefix(got, want) || other != "" {
				t.Errorf("skip %q, fatal %q; want one starting %q", r.skip, r.fatal, want)
			}
		})
	}
}

func TestFile(t *testing.T) {
	t.Setenv(StrictVar, "")
	r := &recorder{}
	File(r, t.TempDir(), "a folder")
	if r.skip != "" || r.fatal != "" {
		t.Errorf("an existing folder: skip %q, fatal %q", r.skip, r.fatal)
	}
	File(r, t.TempDir()+"/absent", "the packages")
	if !strings.Contains(r.skip, "the packages is missing") || r.fatal != "" {
		t.Errorf("an absent file: skip %q, fatal %q", r.skip, r.fatal)
	}
}

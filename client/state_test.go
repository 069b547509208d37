package client

import "testing"

// TestResumeFrom checks which progress a segment resumes from: what it
// wrote within the same boot, only what was synced after a restart, and
// never more than the segment holds.
func TestResumeFrom(t *testing.T) {
	s := segment{Start: 100, End: 200, Done: 10, Written: 60}
	if got := s.resumeFrom(true); got != 60 {
		t.Errorf("same boot: %d; want 60", got)
	}
	if got := s.resumeFrom(false); got != 10 {
		t.Errorf("after a restart: %d; want 10", got)
	}
	s.Written = 500
	if got := s.resumeFrom(true); got != 10 {
		t.Errorf("written past the segment: %d; want the synced 10", got)
	}
	if bootID() == "" {
		t.Log("no boot id on this system: only synced progress is trusted")
	}
}

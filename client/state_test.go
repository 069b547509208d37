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

// TestResplit: a download resumed with more connections than it began
// with cuts its unfinished segments (the widest first, its fetched bytes
// kept with its first half) until there are as many, while each would
// still be worth a request; the segments stay contiguous and keep what
// they had.
func TestResplit(t *testing.T) {
	const mib = 1 << 20
	segs := []segment{
		{Start: 0, End: 10 * mib, Done: 10 * mib},
		{Start: 10 * mib, End: 20 * mib, Done: 2 * mib},
		{Start: 20 * mib, End: 30 * mib, Done: 9 * mib},
		{Start: 30 * mib, End: 40 * mib},
	}
	got, left := resplit(segs, 8, false)
	if left != 8 {
		t.Fatalf("%d left to fetch; want 8: %+v", left, got)
	}
	var next, done int64
	for _, s := range got {
		if s.Start != next || s.End <= s.Start || s.Done > s.End-s.Start {
			t.Fatalf("not contiguous or overfull at %+v: %+v", s, got)
		}
		next = s.End
		done += s.Done
	}
	if next != 40*mib || done != 21*mib {
		t.Errorf("end %d, done %d; want 40 MiB and the 21 MiB fetched", next, done)
	}
	// The last MiB of a segment is not cut: too little for a request.
	small := []segment{{Start: 0, End: 3 * mib, Done: 2 * mib}}
	if got, left := resplit(small, 4, false); left != 1 || len(got) != 1 {
		t.Errorf("1 MiB left cut into %d: %+v", left, got)
	}
}

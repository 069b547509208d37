package proc

import (
	"os"
	"testing"

	"github.com/prometheus/procfs"
)

// procfsMemory reads what ReadMemory does through procfs, which proc
// leaves aside for this one file (see the package's documentation).
func procfsMemory(pid int) (Memory, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return Memory{}, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return Memory{}, err
	}
	return Memory{RSS: int64(st.VmRSS), Peak: int64(st.VmHWM)}, nil
}

// TestMemoryAgreesWithProcfs reads a child's memory, which stands still
// between commands, both ways.
func TestMemoryAgreesWithProcfs(t *testing.T) {
	c := startChild(t)
	c.do(t, "touch 16")
	a, err := ReadMemory(c.pid)
	b, err2 := procfsMemory(c.pid)
	if err != nil || err2 != nil || a != b {
		t.Errorf("ReadMemory = %+v, %v; procfs %+v, %v", a, err, b, err2)
	}
}

// BenchmarkReadMemory reads this process's memory both ways: the reason
// /proc/PID/status is parsed here.
func BenchmarkReadMemory(b *testing.B) {
	for _, bm := range []struct {
		name string
		read func(int) (Memory, error)
	}{{"proc", ReadMemory}, {"procfs", procfsMemory}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bm.read(os.Getpid()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

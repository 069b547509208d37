package proc

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// The same figures read through github.com/prometheus/procfs, to compare
// the hand-written readers with.

func pfProc(tb testing.TB, pid int) procfs.Proc {
	tb.Helper()
	p, err := procfs.NewProc(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func pfMemory(p procfs.Proc) (Memory, error) {
	st, err := p.NewStatus()
	if err != nil {
		return Memory{}, err
	}
	return Memory{RSS: int64(st.VmRSS), Peak: int64(st.VmHWM)}, nil
}

func pfStat(p procfs.Proc) (Stat, error) {
	st, err := p.Stat()
	if err != nil {
		return Stat{}, err
	}
	return Stat{PPID: st.PPID, CPU: time.Duration(st.UTime+st.STime) * time.Second / clockTicks}, nil
}

func pfIO(p procfs.Proc) (IO, error) {
	io, err := p.IO()
	if err != nil {
		return IO{}, err
	}
	return IO{RChar: int64(io.RChar), WChar: int64(io.WChar), ReadBytes: int64(io.ReadBytes), WriteBytes: int64(io.WriteBytes)}, nil
}

func pfTree(fs procfs.FS, pid int) ([]int, error) {
	all := []int{pid}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	for _, p := range procs {
		if st, err := p.Stat(); err == nil {
			parent[p.PID] = st.PPID
		}
	}
	for i := 0; i < len(all); i++ {
		for _, p := range procs {
			if parent[p.PID] == all[i] {
				all = append(all, p.PID)
			}
		}
	}
	return all, nil
}

// TestProcfsAgrees reads a live process tree (a shell with two children)
// through both, the process stopped so that its figures stand still.
func TestProcfsAgrees(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	pid := cmd.Process.Pid
	var pids []int
	waitUntil(func() bool { pids, _ = Tree(pid); return len(pids) == 3 })
	syscall.Kill(-pid, syscall.SIGSTOP)
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := pfTree(fs, pid)
	if err != nil || !slices.Equal(tree, pids) {
		t.Errorf("Tree = %v; procfs %v, %v", pids, tree, err)
	}
	for _, p := range append(pids, os.Getpid()) {
		pp := pfProc(t, p)
		compare(t, "memory", p, ReadMemory, pfMemory, pp)
		compare(t, "stat", p, ReadStat, pfStat, pp)
		compare(t, "io", p, ReadIO, pfIO, pp)
		compare(t, "fds", p, CountFDs, procfs.Proc.FileDescriptorsLen, pp)
		if p == os.Getpid() {
			continue // its own figures move as it reads them
		}
		lim, err := pp.Limits()
		if n, err2 := MaxOpenFiles(p); err != nil || err2 != nil || uint64(n) != lim.OpenFiles {
			t.Errorf("%d: MaxOpenFiles %d, %v; procfs %d, %v", p, n, err2, lim.OpenFiles, err)
		}
	}
	mi, err := fs.Meminfo()
	if n, err2 := MemTotal(); err != nil || err2 != nil || uint64(n) != *mi.MemTotalBytes {
		t.Errorf("MemTotal %d, %v; procfs %d, %v", n, err2, *mi.MemTotalBytes, err)
	}
}

func compare[T comparable](t *testing.T, what string, pid int, hand func(int) (T, error), pf func(procfs.Proc) (T, error), p procfs.Proc) {
	t.Helper()
	a, err := hand(pid)
	b, err2 := pf(p)
	if err != nil || err2 != nil || (a != b && pid != os.Getpid()) {
		t.Errorf("%d: %s %+v, %v; procfs %+v, %v", pid, what, a, err, b, err2)
	}
}

func BenchmarkRead(b *testing.B) {
	pid := os.Getpid()
	p := pfProc(b, pid)
	fs, _ := procfs.NewDefaultFS()
	for _, bm := range []struct {
		name string
		hand func() error
		pf   func() error
	}{
		{"Memory", func() error { _, err := ReadMemory(pid); return err }, func() error { _, err := pfMemory(p); return err }},
		{"Stat", func() error { _, err := ReadStat(pid); return err }, func() error { _, err := pfStat(p); return err }},
		{"IO", func() error { _, err := ReadIO(pid); return err }, func() error { _, err := pfIO(p); return err }},
		{"FDs", func() error { _, err := CountFDs(pid); return err }, func() error { _, err := p.FileDescriptorsLen(); return err }},
		{"Tree", func() error { _, err := Tree(pid); return err }, func() error { _, err := pfTree(fs, pid); return err }},
		{"MaxOpenFiles", func() error { _, err := MaxOpenFiles(pid); return err }, func() error { _, err := p.Limits(); return err }},
	} {
		for _, impl := range []struct {
			name string
			f    func() error
		}{{"hand", bm.hand}, {"procfs", bm.pf}} {
			b.Run(fmt.Sprintf("%s/%s", bm.name, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := impl.f(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

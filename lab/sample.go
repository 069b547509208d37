package lab

import (
	"sync"
	"time"

	"largo/proc"
)

// Sampling periods: resident memory every 50 ms, the process tree (for
// servers that fork workers) every 500 ms.
const (
	samplePeriod = 50 * time.Millisecond
	treePeriod   = 500 * time.Millisecond
)

// sampler samples the resident memory of a process tree, keeps its peak
// since it started or since rebase, and calls kill once when the tree
// passes the guard. It is safe for concurrent use.
type sampler struct {
	pid   int
	guard int64
	kill  func()
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex
	pids   []int
	epoch  int   // counts rebase calls: a sample read before one is not kept
	peak   int64 // highest tree RSS sampled since the last rebase
	killed int64 // tree RSS at which the guard killed, or 0
}

// startSampler samples pid's tree until stop. A guard of 0 or less never
// kills.
func startSampler(pid int, guard int64, kill func()) *sampler {
	s := &sampler{pid: pid, guard: guard, kill: kill, quit: make(chan struct{}), done: make(chan struct{}), pids: []int{pid}}
	go s.loop()
	return s
}

func (s *sampler) loop() {
	defer close(s.done)
	tick := time.NewTicker(samplePeriod)
	defer tick.Stop()
	lastTree := time.Now()
	for {
		if time.Since(lastTree) >= treePeriod {
			if pids, err := proc.Tree(s.pid); err == nil {
				s.mu.Lock()
				s.pids = pids
				s.mu.Unlock()
			}
			lastTree = time.Now()
		}
		s.sample()
		select {
		case <-s.quit:
			return
		case <-tick.C:
		}
	}
}

// sample reads the tree's RSS once, and kills it past the guard.
func (s *sampler) sample() int64 {
	s.mu.Lock()
	pids, epoch := s.pids, s.epoch
	s.mu.Unlock()
	m, err := proc.Sum(pids, proc.ReadMemory, addMemory)
	if err != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch == epoch {
		s.peak = max(s.peak, m.RSS)
	}
	if s.guard > 0 && m.RSS > s.guard && s.killed == 0 {
		s.killed = m.RSS
		s.kill()
	}
	return m.RSS
}

// stop ends the sampling and waits for it.
func (s *sampler) stop() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}

// rebase forgets the samples taken so far: sampledPeak counts from now.
func (s *sampler) rebase() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	s.peak = 0
}

// sampledPeak returns the highest tree RSS sampled since the start or the
// last rebase, 0 if none.
func (s *sampler) sampledPeak() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// killedAt returns the RSS at which the guard killed the tree, or 0.
func (s *sampler) killedAt() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed
}

func addMemory(a, b proc.Memory) proc.Memory {
	return proc.Memory{RSS: a.RSS + b.RSS, Peak: a.Peak + b.Peak}
}

// usage is what a server has cost at one moment, summed over its tree.
type usage struct {
	procs    int   // processes in the tree
	rss, hwm int64 // resident now, and the sum of each process's VmHWM
	cpu      time.Duration
	rchar    int64
	fds      int
}

// usage reads the server tree's figures now. Fields that cannot be read
// (the server is gone) are zero.
func (in *instance) usage() usage {
	var u usage
	if pids, err := proc.Tree(in.pid); err == nil {
		u.procs = len(pids)
	}
	if m, err := proc.TreeMemory(in.pid); err == nil {
		u.rss, u.hwm = m.RSS, m.Peak
	}
	u.cpu, _ = proc.TreeCPU(in.pid)
	if io, err := proc.TreeIO(in.pid); err == nil {
		u.rchar = io.RChar
	}
	u.fds, _ = proc.TreeFDs(in.pid)
	return u
}

// peak returns the server tree's highest RSS between idle, read when the
// sampler was rebased, and u, read at the end before the server stops:
// the highest 50 ms sample in between, or, for a server of one process
// whose VmHWM rose past its value at idle, that VmHWM, which is then exact
// (proc.PeakBetween). VmHWM counts start-up too, so otherwise it says
// nothing of the scenario; and for a tree of processes the sum of their
// VmHWMs is no peak of the tree at all. A server the guard killed peaked
// at least where it was killed.
func (in *instance) peak(idle, u usage) int64 {
	sampled := in.guard.sampledPeak()
	if at := in.guard.killedAt(); at > 0 {
		return max(at, sampled)
	}
	if idle.procs == 1 && u.procs == 1 {
		return proc.PeakBetween(proc.Memory{RSS: idle.rss, Peak: idle.hwm}, proc.Memory{RSS: u.rss, Peak: u.hwm}, sampled)
	}
	return max(idle.rss, u.rss, sampled)
}

// fdsTo counts the server tree's descriptors open on path.
func (in *instance) fdsTo(path string) int {
	n, _ := proc.TreeFDsTo(in.pid, path)
	return n
}

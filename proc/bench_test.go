package proc

import (
	"testing"
)

// The cost of measuring, on a tree of two processes (a child and the one
// it started), the shape of a server that forks one worker. The lab samples
// a server's resident memory every 50 ms and its tree every 500 ms, and
// reads every figure of the tree at the start and the end of a scenario.

// BenchmarkSample is one tick of the lab's sampler: the tree's RSS, and
// the tree itself every tenth tick.
func BenchmarkSample(b *testing.B) {
	c := startChild(b)
	c.do(b, "spawn")
	pids, err := Tree(c.pid)
	if err != nil || len(pids) != 2 {
		b.Fatalf("Tree = %v, %v", pids, err)
	}
	add := func(a, b Memory) Memory { return Memory{RSS: a.RSS + b.RSS, Peak: a.Peak + b.Peak} }
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%10 == 0 {
			if pids, err = Tree(c.pid); err != nil {
				b.Fatal(err)
			}
		}
		i++
		if _, err := Sum(pids, ReadMemory, add); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUsage reads every figure of the tree, as the lab does at the
// start and the end of a scenario.
func BenchmarkUsage(b *testing.B) {
	c := startChild(b)
	c.do(b, "spawn")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Tree(c.pid); err != nil {
			b.Fatal(err)
		}
		if _, err := TreeMemory(c.pid); err != nil {
			b.Fatal(err)
		}
		if _, err := TreeCPU(c.pid); err != nil {
			b.Fatal(err)
		}
		if _, err := TreeIO(c.pid); err != nil {
			b.Fatal(err)
		}
		if _, err := TreeFDs(c.pid); err != nil {
			b.Fatal(err)
		}
	}
}

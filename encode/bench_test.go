package encode

import (
	"io"
	"math/rand/v2"
	"testing"
)

// BenchmarkEncode measures the throughput of each coding at each dynamic
// level, on a realistic access log and on incompressible data, through
// pooled encoders as responses use them. It reports the compressed size
// as a fraction of the input ("ratio").
//
//	go test ./encode -run X -bench Encode -benchtime 20x
func BenchmarkEncode(b *testing.B) {
	const size = 8 << 20
	random := make([]byte, size)
	rand.NewChaCha8([32]byte{1}).Read(random)
	inputs := []struct {
		name string
		data []byte
	}{{"log", testLog(size)}, {"random", random}}
	for _, in := range inputs {
		for _, level := range []Level{Fast, Default, Best} {
			e, err := NewEncoders(Config{Level: level})
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range Codings {
				b.Run(in.name+"/"+string(c)+"/"+level.String(), func(b *testing.B) {
					b.SetBytes(int64(len(in.data)))
					var out countWriter
					for b.Loop() {
						out = 0
						enc, err := e.get(c, &out)
						if err != nil {
							b.Fatal(err)
						}
						for off := 0; off < len(in.data); off += 32 << 10 {
							enc.Write(in.data[off:min(off+32<<10, len(in.data))])
						}
						if err := enc.Close(); err != nil {
							b.Fatal(err)
						}
						e.put(c, enc)
					}
					b.ReportMetric(float64(out)/float64(len(in.data)), "ratio")
				})
			}
		}
	}
}

// countWriter counts and discards.
type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

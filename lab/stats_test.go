package lab

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{[]float64{3}, 50, 3},
		{[]float64{3, 1, 2}, 50, 2},
		{[]float64{4, 1, 3, 2}, 50, 2.5},
		{[]float64{1, 2, 3, 4, 5}, 0, 1},
		{[]float64{1, 2, 3, 4, 5}, 100, 5},
		{[]float64{1, 2, 3, 4, 5}, 25, 2},
		{[]float64{10, 20}, 90, 19},
		{[]float64{5, 1}, -10, 1},
		{[]float64{5, 1}, 250, 5},
	}
	for _, tt := range tests {
		if got := Percentile(tt.xs, tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Percentile(%v, %v) = %v; want %v", tt.xs, tt.p, got, tt.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of nothing is not NaN")
	}
	xs := []float64{3, 1, 2}
	Percentile(xs, 50)
	if xs[0] != 3 || xs[1] != 1 {
		t.Error("Percentile sorted its argument")
	}
}

func TestSpread(t *testing.T) {
	s := spread([]float64{7, 2, 9})
	if s != (Spread{Median: 7, Min: 2, Max: 9, N: 3}) {
		t.Fatalf("spread = %+v", s)
	}
	if spread(nil) != (Spread{}) {
		t.Fatal("spread of nothing is not zero")
	}
}

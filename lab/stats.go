package lab

import (
	"math"
	"slices"
)

// Spread is a figure over repetitions: its median and range.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// spread summarises xs; the zero Spread if xs is empty.
func spread(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	return Spread{Median: Percentile(xs, 50), Min: slices.Min(xs), Max: slices.Max(xs), N: len(xs)}
}

// Percentile returns the p-th percentile (0 to 100) of xs, interpolating
// linearly between the closest ranks; the median of an even count is the
// mean of the middle two. It returns NaN for no values and does not change
// xs.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 || math.IsNaN(p) {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	p = min(max(p, 0), 100)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

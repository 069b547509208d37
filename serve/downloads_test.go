package serve

import "testing"

func TestRangeLength(t *testing.T) {
	for _, c := range []struct {
		rg   string
		want int64
	}{
		{"", 100},
		{"bytes=0-9", 10},
		{"bytes=50-", 50},
		{"bytes=-30", 30},
		{"bytes=-300", 100},
		{"bytes=0-9,20-29", 20},
		{"bytes=90-200", 10},
		{"bytes=100-", 0},
		{"bytes=9-0", 100},
		{"bytes=x-1", 100},
		{"items=0-1", 100},
		{"bytes=0-49,0-49,0-49", 100},
	} {
		if got := rangeLength(c.rg, 100); got != c.want {
			t.Errorf("rangeLength(%q, 100) = %d; want %d", c.rg, got, c.want)
		}
	}
}

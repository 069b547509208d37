package largo

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseAge reads a length of time as people write it for how long files
// are kept: a Go duration ("90m", "36h", "2s") or a number of days or
// weeks ("7d", "2w", "1.5d"). Zero is allowed (it means "never expires"
// where a caller says so); negative and overflowing ages are errors.
func ParseAge(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(t, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(t, "w"):
		unit = 7 * 24 * time.Hour
	}
	if unit != 0 {
		n, err := strconv.ParseFloat(strings.TrimSpace(t[:len(t)-1]), 64)
		if err != nil || n != n {
			return 0, fmt.Errorf("age %q: a duration such as 7d, 36h or 90m", s)
		}
		if n < 0 {
			return 0, fmt.Errorf("age %q: negative", s)
		}
		if n*float64(unit) >= 1<<63 {
			return 0, fmt.Errorf("age %q: too long", s)
		}
		return time.Duration(n * float64(unit)), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("age %q: a duration such as 7d, 36h or 90m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("age %q: negative", s)
	}
	return d, nil
}

// FormatAge writes an age as ParseAge reads it back: whole days as "7d",
// anything else as a Go duration.
func FormatAge(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

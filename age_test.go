package largo

import (
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true},
		{"2w", 14 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"2s", 2 * time.Second, true},
		{" 90m ", 90 * time.Minute, true},
		{"0", 0, true},
		{"0d", 0, true},
		{"", 0, false},
		{"d", 0, false},
		{"-1d", 0, false},
		{"-5s", 0, false},
		{"7 days", 0, false},
		{"1e300d", 0, false},
		{"NaNd", 0, false},
	} {
		got, err := ParseAge(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestFormatAge(t *testing.T) {
	for _, d := range []time.Duration{7 * 24 * time.Hour, 36 * time.Hour, 2 * time.Second, 0} {
		back, err := ParseAge(FormatAge(d))
		if err != nil || back != d {
			t.Errorf("FormatAge(%v) = %q reads back as %v, %v", d, FormatAge(d), back, err)
		}
	}
	if got := FormatAge(7 * 24 * time.Hour); got != "7d" {
		t.Errorf("FormatAge(7 days) = %q", got)
	}
}

func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"7d", "2s", "1.5w", "-1d", "1e300d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseAge(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseAge(%q) = %v, negative", s, d)
		}
	})
}

package largo

import "testing"

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"500MB", 500e6, false},
		{"500 mb", 500e6, false},
		{"10GiB", 10 << 30, false},
		{"10G", 10 << 30, false},
		{"1.5GiB", 3 << 29, false},
		{"64k", 64 << 10, false},
		{"64KiB", 64 << 10, false},
		{"7b", 7, false},
		{"1kB", 1000, false},
		{"8EiB", 0, true},
		{"9223372036854775807", 1<<63 - 1, false},
		{"9223372036854775808", 0, true},
		{"10000PB", 0, true},
		{"-1", 0, true},
		{"-1MB", 0, true},
		{"", 0, true},
		{"MB", 0, true},
		{"ten", 0, true},
		{"0x10", 0, true},
		{"1e3", 1000, false},
		{"NaN", 0, true},
		{"inf", 0, true},
		{"1_000", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.bad != (err != nil) || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 1 << 30: "1 GiB", 5<<30 + 1<<29: "5.5 GiB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1", "1.5GiB", "10 MB", "-3", "1e400", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

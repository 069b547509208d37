package wire

import "testing"

func TestParseItems(t *testing.T) {
	bools := []struct {
		in    string
		b, ok bool
	}{
		{"?1", true, true},
		{"?0", false, true},
		{" ?1 ", true, true},
		{"?1;a=1;b", true, true},
		{"?1;", false, false},
		{"?1;A=1", false, false},
		{"?2", false, false},
		{"1", false, false},
		{"true", false, false},
		{"", false, false},
		{"?1, ?0", false, false},
		{"? 1", false, false},
	}
	for _, c := range bools {
		b, ok := ParseBoolItem(c.in)
		if b != c.b || ok != c.ok {
			t.Errorf("ParseBoolItem(%q) = %v, %v; want %v, %v", c.in, b, ok, c.b, c.ok)
		}
	}
	ints := []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{" 42; x=1 ", 42, true},
		{"42 ;x=1", 0, false},
		{"999999999999999", 999999999999999, true},
		{"1000000000000000", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"", 0, false},
		{"1, 2", 0, false},
		{"0x10", 0, false},
	}
	for _, c := range ints {
		n, ok := ParseIntegerItem(c.in)
		if n != c.n || ok != c.ok {
			t.Errorf("ParseIntegerItem(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.ok)
		}
	}
	if FormatBoolItem(true) != "?1" || FormatBoolItem(false) != "?0" {
		t.Error("FormatBoolItem")
	}
}

// FuzzParseItems: the parsers never panic, accept only what they can
// write back, and never report a negative offset.
func FuzzParseItems(f *testing.F) {
	for _, s := range []string{"?1", "?0;a", "12", " 7 ;x=\"y\"", "?1, ?0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if b, ok := ParseBoolItem(v); ok {
			if bare, _ := bareItem(v); bare != FormatBoolItem(b) {
				t.Errorf("%q read as %v", v, b)
			}
		}
		if n, ok := ParseIntegerItem(v); ok && n < 0 {
			t.Errorf("%q read as %d", v, n)
		}
	})
}

package largo

import (
	"net/netip"
	"testing"
)

func TestClientName(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":                    "203.0.113.7",
		"::ffff:203.0.113.7":             "203.0.113.7",
		"2001:db8:1:2:3:4:5:6":           "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff:ffff:ff": "2001:db8:1:2::/64",
		"fe80::1%eth0":                   "fe80::/64",
		"::1":                            "::/64",
	} {
		if got := ClientName(netip.MustParseAddr(in)); got != want {
			t.Errorf("ClientName(%s) = %s; want %s", in, got, want)
		}
	}
}

func TestClientOf(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7:8080":           "203.0.113.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[::ffff:203.0.113.7]:1":     "203.0.113.7",
		"2001:db8:1:2::9":            "2001:db8:1:2::/64",
		"203.0.113.7":                "203.0.113.7",
		"pipe":                       "pipe",
		"":                           "",
	} {
		if got := ClientOf(in); got != want {
			t.Errorf("ClientOf(%q) = %q; want %q", in, got, want)
		}
	}
}

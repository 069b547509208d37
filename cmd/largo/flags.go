package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"largo"
)

// sizeValue is a flag holding a byte count, given in bytes or with a unit
// (500MB, 10GiB).
type sizeValue int64

func (s *sizeValue) Set(v string) error {
	n, err := largo.ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeValue(n)
	return nil
}

// String returns the size in the largest binary unit that holds it
// exactly (16MiB), else the largest decimal one (20MB), or in bytes;
// ParseSize reads it back.
func (s *sizeValue) String() string {
	n := int64(*s)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

func (s *sizeValue) Type() string { return "size" }

// choiceValue is a flag that takes one of a fixed set of words.
type choiceValue struct {
	value   string
	choices []string
}

func (c *choiceValue) Set(v string) error {
	for _, ch := range c.choices {
		if v == ch {
			c.value = v
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %v", v, c.choices)
}

func (c *choiceValue) String() string { return c.value }
func (c *choiceValue) Type() string   { return "string" }

// parseInts reads a comma-separated list of integers.
func parseInts(v string) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a comma-separated list of numbers", v)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// joinInts writes a list of integers for parseInts.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// durationValue is a flag holding a length of time, written as a Go
// duration (90m, 36h) or in days or weeks (7d, 2w): every duration flag
// of largo's reads both, as largo.ParseAge does.
type durationValue struct{ d *time.Duration }

func (v durationValue) Set(s string) error {
	d, err := largo.ParseAge(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return largo.FormatAge(*v.d)
}

func (v durationValue) Type() string { return "duration" }

// durationVar defines a duration flag (see durationValue) with the
// default def.
func durationVar(f *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	f.Var(durationValue{p}, name, usage)
}

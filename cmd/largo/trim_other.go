//go:build !linux

package main

// dropStartupPages does nothing where /proc and madvise are not at hand.
func dropStartupPages() {}

// resetPeak does nothing where /proc is not at hand.
func resetPeak() {}

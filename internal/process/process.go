// Package process tells whether a process of this machine still runs,
// for what a process that died leaves behind (temporary files, leases)
// to be told from what one still running holds. It has no state.
package process

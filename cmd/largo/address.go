package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"largo"
	"largo/internal/process"
	"largo/record"
)

// A running server records where clients reach it in the state area of
// the store it serves, so that largo share, run beside it on the same
// folder or bucket, makes links that work without being told the
// address: one record per instance (servers/...), written once the
// server listens and removed at its stop. A record whose process is gone
// (a crash, a kill) is one of this machine's that share sees through and
// the next start of a server removes.

// addressPrefix is where the address records are, in the state area.
const addressPrefix = "servers/"

// addressRecord is what a server records of where it is reached.
type addressRecord struct {
	// URL is the base URL clients reach the server at: --public-url, or
	// the address it listens on.
	URL string `json:"url"`
	// Host and PID name the process, so that a record left by one that
	// is gone is known as such on its machine.
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started"`
}

// addresses is the table of the address records of a state area.
func addresses(state largo.State) *record.Table[addressRecord] {
	return record.NewTable[addressRecord](record.New(state, record.Options{}), addressPrefix, record.TableOptions{})
}

// thisProcess returns the host name and process id an address record
// names.
func thisProcess() (string, int) {
	host, _ := os.Hostname()
	return host, os.Getpid()
}

// addressKey is the key of the record of the process pid on host.
func addressKey(host string, pid int) string {
	return record.NameKey(host + "\x00" + strconv.Itoa(pid))
}

// gone reports whether the record's process is known to be gone: one of
// this machine's that no longer runs.
func (a addressRecord) gone(host string) bool {
	return process.Known && a.Host == host && a.PID > 0 && a.PID != os.Getpid() && !process.Alive(a.PID)
}

// recordAddress records url as where this process is reached, and
// removes the records of this machine's servers that are gone.
func recordAddress(ctx context.Context, state largo.State, url string) error {
	t := addresses(state)
	host, pid := thisProcess()
	for e, err := range t.All(ctx) {
		if err == nil && e.Value.gone(host) {
			t.Delete(ctx, e.Key)
		}
	}
	return t.Put(ctx, addressKey(host, pid), addressRecord{URL: url, Host: host, PID: pid, Started: time.Now().UTC()})
}

// forgetAddress removes this process's address record.
func forgetAddress(ctx context.Context, state largo.State) error {
	host, pid := thisProcess()
	return addresses(state).Delete(ctx, addressKey(host, pid))
}

// recordedAddress returns the URL the most recently started server of
// state recorded, of those not known to be gone; ok is false when there
// is none, and gone then names a server that recorded one and stopped
// without removing it, if any.
func recordedAddress(ctx context.Context, state largo.State) (url string, ok bool, gone string, err error) {
	host, _ := thisProcess()
	var newest addressRecord
	for e, rerr := range addresses(state).All(ctx) {
		switch {
		case rerr != nil:
			err = errors.Join(err, rerr)
		case e.Value.gone(host):
			gone = fmt.Sprintf("%s (process %d, which no longer runs)", e.Value.URL, e.Value.PID)
		case e.Value.Started.After(newest.Started):
			newest = e.Value
		}
	}
	if newest.URL == "" {
		return "", false, gone, err
	}
	return newest.URL, true, "", nil
}

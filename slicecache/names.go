package slicecache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The folder's layout: SHARD/REST-INDEX, where SHARD and REST are the
// first two and the other 62 hexadecimal digits of the SHA-256 of the
// object's key, version, size and the slice size, and INDEX is the
// slice's number in decimal; the temporary files of fills, in the shards
// too, begin with tmpPrefix; lockName is the lock file.
const (
	tmpPrefix = ".tmp-"
	lockName  = ".lock"
)

// objectID is the hexadecimal digest that names the slices of one
// version of an object cut into slices of size slice.
func objectID(o Object, slice int64) string {
	h := sha256.New()
	for _, s := range []string{o.Key, o.Version, strconv.FormatInt(o.Size, 10), strconv.FormatInt(slice, 10)} {
		// Each part with its length first: no two objects spell alike.
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sliceName is the name of slice i of the object id, relative to the
// folder.
func sliceName(id string, i int64) string {
	return id[:2] + "/" + id[2:] + "-" + strconv.FormatInt(i, 10)
}

// isShard reports whether name is a shard's: two hexadecimal digits.
func isShard(name string) bool {
	return len(name) == 2 && isHex(name)
}

// isSlice reports whether name, in a shard, is a slice's.
func isSlice(name string) bool {
	rest, index, ok := strings.Cut(name, "-")
	if !ok || len(rest) != 62 || !isHex(rest) || index == "" {
		return false
	}
	n, err := strconv.ParseInt(index, 10, 64)
	return err == nil && n >= 0 && strconv.FormatInt(n, 10) == index
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// lockDir takes the lock of the folder dir, which one process holds at a
// time: two caches in one folder would remove each other's slices.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("slice cache: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("slice cache %s: in use by another process", dir)
		}
		return nil, fmt.Errorf("slice cache %s: lock: %v", dir, err)
	}
	return f, nil
}

// found is a slice found in the folder at start.
type found struct {
	name string
	size int64
	mod  time.Time
}

// scan lists the slices in dir, the least recently filled first, and
// removes the temporary files of fills that a crash cut. Anything that is
// not the cache's own is an error: the folder is the cache's alone.
func scan(dir string) ([]found, error) {
	stranger := func(name string) error {
		return fmt.Errorf("slice cache %s: %s is not the cache's: give an empty folder, used by nothing else", dir, name)
	}
	tops, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("slice cache: %v", err)
	}
	var out []found
	for _, top := range tops {
		switch {
		case top.Name() == lockName && top.Type().IsRegular():
			continue
		case !top.IsDir() || !isShard(top.Name()):
			return nil, stranger(top.Name())
		}
		shard := filepath.Join(dir, top.Name())
		files, err := os.ReadDir(shard)
		if err != nil {
			return nil, fmt.Errorf("slice cache: %v", err)
		}
		for _, f := range files {
			rel := top.Name() + "/" + f.Name()
			switch {
			case !f.Type().IsRegular():
				return nil, stranger(rel)
			case strings.HasPrefix(f.Name(), tmpPrefix):
				if err := os.Remove(filepath.Join(shard, f.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("slice cache: %v", err)
				}
				continue
			case !isSlice(f.Name()):
				return nil, stranger(rel)
			}
			info, err := f.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("slice cache: %v", err)
			}
			out = append(out, found{name: rel, size: info.Size(), mod: info.ModTime()})
		}
	}
	slices.SortFunc(out, func(a, b found) int { return a.mod.Compare(b.mod) })
	return out, nil
}

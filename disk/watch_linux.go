package disk

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"largo"
)

// Watcher tells of changes made in the folder's sub-folders by anyone,
// through inotify: it watches the folders on the way to names it is
// given (Watch), and counts the changes made in them (Drain). It is what lets a cache of the folder's files
// (package filecache) serve a file it keeps without a stat per answer,
// and still see a change made behind the server at once: the kernel
// queues a change's notice before the call that made it returns, so a
// Drain that begins after the change returns knows of it.
//
// What it cannot see, and its users must look at otherwise: a file
// changed through another hard link, in a folder it does not watch (a
// file of more than one link is not to be trusted to it), and bytes
// written through a shared memory map, which raise no notice.
//
// A Watcher is safe for concurrent use; its calls share one lock.
type Watcher struct {
	fd  int
	dir *Store
	mu  sync.Mutex
	// watched maps each folder watched (a physical name, "" the root)
	// to its watch; maxWatched bounds them.
	watched    map[string]int32
	folders    map[int32]string // watched, the other way round
	maxWatched int
	changes    uint64 // the changes told by now, counted by Drain
	buf        [16 << 10]byte
}

// watchMask is what the folders are watched for: every change of an
// entry (made, removed, moved, written, its metadata changed), and the
// folder itself moved or removed.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// NewWatcher returns a Watcher of the store's folder that watches at
// most maxFolders folders at once, or an error when the system gives no
// inotify instance.
func (s *Store) NewWatcher(maxFolders int) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &Watcher{fd: fd, dir: s, watched: map[string]int32{}, folders: map[int32]string{}, maxWatched: max(maxFolders, 1)}, nil
}

// Close releases the watches.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil
	}
	err := unix.Close(w.fd)
	w.fd = -1
	return err
}

// Watch watches every folder on the way to the physical name (the root
// and each folder above the name, not the name itself), and returns the
// count of changes told so far (as Drain), read after every notice
// queued before the call and once the folders are watched: a change from
// then on moves it. ok is false when a folder could not be watched (it
// is gone, a link, or the bound of folders is reached), in which case
// the name's changes are not all told.
func (w *Watcher) Watch(name string) (changes uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		w.changes++
		return w.changes, false
	}
	// What is queued first: a folder moved drops every watch, and the
	// folders are then watched anew below.
	w.drainLocked()
	var missing []string
	for dir := largo.Parent(name); ; dir = largo.Parent(dir) {
		if _, ok := w.watched[dir]; !ok {
			missing = append(missing, dir)
		}
		if dir == "" {
			break
		}
	}
	if len(w.watched)+len(missing) > w.maxWatched {
		// Full: start again with what is asked for from now on.
		w.resetLocked()
		w.changes++
		return w.changes, w.maxWatched > strings.Count(name, "/") && w.addAll(name)
	}
	for _, dir := range missing {
		if !w.add(dir) {
			return w.changes, false
		}
	}
	return w.changes, true
}

// addAll watches every folder on the way to name.
func (w *Watcher) addAll(name string) bool {
	for dir := largo.Parent(name); ; dir = largo.Parent(dir) {
		if !w.add(dir) {
			return false
		}
		if dir == "" {
			return true
		}
	}
}

// add watches the folder dir, opened beneath the store's folder with no
// link followed, by its descriptor's name in /proc: the folder watched is
// the one a request reaches, whatever a link elsewhere says.
func (w *Watcher) add(dir string) bool {
	fd, err := w.dir.beneath(dir, oPath|unix.O_DIRECTORY)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		return false
	}
	w.watched[dir] = int32(wd)
	w.folders[int32(wd)] = dir
	return true
}

// resetLocked drops every watch: the folders are watched again as they
// are asked for.
func (w *Watcher) resetLocked() {
	for _, wd := range w.watched {
		unix.InotifyRmWatch(w.fd, uint32(wd))
	}
	clear(w.watched)
	clear(w.folders)
}

// Drain reads the notices queued by now and returns the count of
// changes told so far: a count that moved since a name was judged
// current means that it is to be looked at again. Notices lost (the
// queue overflowed) and a closed Watcher count as changes. A folder
// watched, or one on the way to one, moved or removed stops every watch,
// so that a folder made in its place is watched when it is next asked
// for.
func (w *Watcher) Drain() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		w.changes++
		return w.changes
	}
	w.drainLocked()
	return w.changes
}

// drainLocked reads the notices queued, counting them.
func (w *Watcher) drainLocked() {
	for {
		n, err := unix.Read(w.fd, w.buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n <= 0 || err != nil {
			return // EAGAIN: nothing more is queued
		}
		w.changes++
		if w.moved(w.buf[:n]) {
			w.resetLocked()
		}
	}
}

// moved reports whether the notices in b tell of a folder watched, or
// one on the way to one, moved or removed, or of lost notices. A watch
// the Watcher removed itself (resetLocked) ends with a notice too, which
// tells nothing.
func (w *Watcher) moved(b []byte) bool {
	const gone = unix.IN_Q_OVERFLOW | unix.IN_UNMOUNT | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	moved := false
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		_, ours := w.folders[ev.Wd]
		switch {
		case ev.Mask&gone != 0,
			ev.Mask&unix.IN_IGNORED != 0 && ours,
			ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
			moved = true
		}
		b = b[unix.SizeofInotifyEvent+int(ev.Len):]
	}
	return moved
}

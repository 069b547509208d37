package disk

import (
	"os"

	"largo/internal/process"
)

// alive reports whether the process pid may still be writing: it is this
// process, or one that exists. Where that cannot be asked, every writer
// may be, and only age sweeps its files.
func alive(pid int) bool { return pid == os.Getpid() || process.Alive(pid) }

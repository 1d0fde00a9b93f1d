package shim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// idleTrimDelay is how long a shim stays idle (no turn in flight) before it
// hands back the memory it does not need while idle (releaseIdleMemory).
// Long enough that a queue drained message by message does not trim between
// turns, short enough that a team at rest is trimmed within seconds.
const idleTrimDelay = 2 * time.Second

// idleRetrim is how often a shim that stays idle trims again: the runtime's
// periodic garbage collection touches pages of the binary again.
const idleRetrim = 5 * time.Minute

// span is a range of the address space, [start, end).
type span struct{ start, end uintptr }

// releaseIdleMemory hands back what an idle shim keeps but does not use.
// With afterTurn (a turn ran since the last release), the heap the turn
// left free, returned to the system at the cost of a collection (a few
// milliseconds once per idle period; the start-up leaves next to nothing,
// and the runtime would keep a heap goal's worth). Then the pages of the
// binary and the shared libraries it mapped while starting and running
// turns (its whole command-line program is linked in and initialised: the
// shim uses a small part of it), most of its resident memory. Those are
// page-cache pages, shared and unchanged: dropped from this process's
// mapping, the ones a later turn needs come back from the page cache at
// the cost of a minor fault. It returns what could not be read or released; nothing
// of the shim depends on it.
func releaseIdleMemory(afterTurn bool) error {
	if afterTurn {
		debug.FreeOSMemory()
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return fmt.Errorf("read the process's mappings: %w", err)
	}
	defer f.Close()
	spans, err := cleanFileSpans(f)
	if err != nil {
		return fmt.Errorf("read the process's mappings: %w", err)
	}
	for _, s := range spans {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, s.start, s.end-s.start, syscall.MADV_DONTNEED); e != 0 {
			return fmt.Errorf("release %#x-%#x: %w", s.start, s.end, e)
		}
	}
	return nil
}

// cleanFileSpans reads /proc/<pid>/smaps and returns the mappings whose
// resident pages can be dropped without changing what the process reads
// there: private, readable, not writable, backed by a file (a path), with no
// page of their own (Anonymous 0 kB: nothing written, as the relocations of
// a library's read-only-after-relocation part are) and something resident.
// Pure.
func cleanFileSpans(r io.Reader) ([]span, error) {
	var (
		out     []span
		cur     span
		ok      bool
		rss     int64
		private int64 = -1
	)
	flush := func() {
		if ok && rss > 0 && private == 0 {
			out = append(out, cur)
		}
		ok, rss, private = false, 0, -1
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if k := fields[0]; strings.HasSuffix(k, ":") {
			// A field of the current mapping ("Rss:", "Anonymous:", ...).
			if len(fields) < 2 {
				continue
			}
			n, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				continue // VmFlags and the like
			}
			switch k {
			case "Rss:":
				rss = n
			case "Anonymous:":
				private = n
			}
			continue
		}
		// A mapping's header: "start-end perms offset dev inode [path]".
		flush()
		if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") {
			continue
		}
		perms := fields[1]
		if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		lo, hi, found := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !found || err1 != nil || err2 != nil || end <= start {
			continue
		}
		cur, ok = span{uintptr(start), uintptr(end)}, true
	}
	flush()
	return out, sc.Err()
}

package reap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MarkEnv names the environment variable that marks every process batty
// starts for a project: the daemon sets it, on every shim, to the absolute
// path of the project's .batty directory, and the shims' codex processes and
// everything the model runs inherit it. A process that outlived the daemon
// and its shims (killed together) is found by its mark and swept.
//
// The mark is inherited at fork and exec; a process that clears its
// environment (env -i) before exec, or overwrites the memory that holds it,
// is not found by it (a cgroup of the team catches those where one is
// available).
const MarkEnv = "BATTY_PROJECT_MARK"

// HasEnv reports whether environ — a process's environment as
// /proc/<pid>/environ holds it, entries ended by NUL bytes — has the entry
// key=value exactly: the whole entry, not a prefix of a longer value nor
// the tail of another entry. A last entry without its NUL counts. It never
// panics, whatever environ holds.
func HasEnv(environ []byte, key, value string) bool {
	entry := key + "=" + value
	for len(environ) > 0 {
		i := bytes.IndexByte(environ, 0)
		e := environ
		if i >= 0 {
			e, environ = environ[:i], environ[i+1:]
		} else {
			environ = nil
		}
		if string(e) == entry {
			return true
		}
	}
	return false
}

// Marked returns the live (not zombie) processes of this process's user,
// other than this process, whose environment holds key=value (see HasEnv).
// Processes that vanish while it reads are skipped.
func Marked(key, value string) []int {
	var out []int
	for _, p := range listProcs() {
		if p.pid != os.Getpid() && p.state != 'Z' && marked(p.pid, key, value) {
			out = append(out, p.pid)
		}
	}
	return out
}

// marked reports whether process pid belongs to this process's user and
// its environment holds key=value.
func marked(pid int, key, value string) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return false
	}
	env, err := os.ReadFile(dir + "/environ")
	return err == nil && HasEnv(env, key, value)
}

// SweepMarked SIGKILLs every process Marked(key, value) finds except this
// process, its ancestors, and the processes in the trees below the pids in
// spare, and waits until they have exited or timeout passes; it scans
// again after each round, for processes forked meanwhile. It blocks, and
// returns how many processes it killed and an error naming the survivors.
//
// It never signals a pid that came to name another process: each process is
// pinned with a pidfd first, its mark read again through /proc while the
// pidfd shows it alive, and the signal sent through the pidfd. Without
// pidfds (Linux < 5.3) it kills nothing and says so in its error.
func SweepMarked(key, value string, spare []int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	killed := 0
	for {
		keep := sparedPids(spare)
		var pinned []*Pidfd
		for _, pid := range Marked(key, value) {
			if keep[pid] {
				continue
			}
			p, err := pinMarked(pid, key, value)
			if errors.Is(err, unix.ENOSYS) {
				closeAll(pinned)
				return killed, fmt.Errorf("no pidfds on this kernel (Linux < 5.3): %s=%s processes were not swept: %w", key, value, err)
			}
			if err != nil || p == nil {
				continue // gone, or no longer marked
			}
			if err := p.Kill(); err != nil {
				p.Close()
				continue // exited meanwhile (ESRCH)
			}
			pinned = append(pinned, p)
		}
		if len(pinned) == 0 {
			return killed, nil
		}
		killed += len(pinned)
		var left []int
		for _, p := range pinned {
			if !p.WaitExit(deadline) {
				left = append(left, p.pid)
			}
		}
		closeAll(pinned)
		if len(left) > 0 {
			return killed, fmt.Errorf("%d processes marked %s=%s survived SIGKILL for %s: %v", len(left), key, value, timeout, left)
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("processes marked %s=%s kept appearing for %s", key, value, timeout)
		}
	}
}

// pinMarked opens a pidfd on pid and checks, while the pidfd shows the
// process alive (so pid still names it), that it still carries the mark.
// It returns nil and no error when the process is gone or unmarked.
func pinMarked(pid int, key, value string) (*Pidfd, error) {
	p, err := OpenPidfd(pid)
	if errors.Is(err, unix.ESRCH) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ok := marked(pid, key, value)
	if !ok || p.WaitExit(time.Time{}) {
		p.Close()
		return nil, nil
	}
	return p, nil
}

// sparedPids returns this process, its ancestors, and every process in the
// trees below the pids in roots.
func sparedPids(roots []int) map[int]bool {
	procs := listProcs()
	parent := make(map[int]int, len(procs))
	children := map[int][]int{}
	for _, p := range procs {
		parent[p.pid] = p.ppid
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	keep := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !keep[pid]; pid = parent[pid] {
		keep[pid] = true
	}
	seen := map[int]bool{}
	stack := append([]int(nil), roots...)
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if pid <= 0 || seen[pid] {
			continue
		}
		seen[pid], keep[pid] = true, true
		stack = append(stack, children[pid]...)
	}
	return keep
}

func closeAll(ps []*Pidfd) {
	for _, p := range ps {
		p.Close()
	}
}

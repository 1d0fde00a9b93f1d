package reap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoCgroup is wrapped by OpenCgroup's error when no usable cgroup v2 is
// available: none is mounted, this process's cgroup is not writable (not
// delegated to its user), the kernel has no cgroup.kill (Linux < 5.14), or
// the cgroup asked for does not exist.
var ErrNoCgroup = errors.New("no usable cgroup v2")

// Cgroup is one cgroup v2 directory below this process's own cgroup, for a
// group of processes that are killed together: processes started into it
// (see FD) stay in it, with everything they fork, whatever session or
// environment they give themselves. Its methods are not safe for
// concurrent use; its owner closes it with Remove or Close.
type Cgroup struct {
	dir string
	f   *os.File // the directory, for CLONE_INTO_CGROUP
}

// OpenCgroup opens the cgroup name directly below this process's own
// cgroup v2, creating it (mode 0755) when create is set and it does not
// exist. The error wraps ErrNoCgroup when cgroups cannot be used here.
// This process itself never moves into it.
func OpenCgroup(name string, create bool) (*Cgroup, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("cgroup name %q: must be one path element", name)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	parent, err := ownCgroupDir(self, mounts)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(parent, name)
	if create {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: create %s: %w", ErrNoCgroup, dir, err)
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrNoCgroup, dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s has no cgroup.kill (Linux < 5.14): %w", ErrNoCgroup, dir, err)
	}
	return &Cgroup{dir: dir, f: f}, nil
}

// ownCgroupDir finds this process's cgroup v2 directory from the contents
// of /proc/self/cgroup (its "0::<path>" line) and /proc/self/mountinfo
// (the cgroup2 mount whose root holds that path). The error wraps
// ErrNoCgroup. It never panics, whatever the inputs hold.
func ownCgroupDir(cgroup, mountinfo []byte) (string, error) {
	path := ""
	for _, line := range strings.Split(string(cgroup), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
			break
		}
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("%w: this process has no cgroup v2 path in /proc/self/cgroup", ErrNoCgroup)
	}
	for _, line := range strings.Split(string(mountinfo), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		if f := strings.Fields(post); len(f) == 0 || f[0] != "cgroup2" {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		rel, ok := strings.CutPrefix(path, root)
		if !ok || (root != "/" && rel != "" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		return filepath.Join(mnt, rel), nil
	}
	return "", fmt.Errorf("%w: no cgroup2 file system mounted over %s", ErrNoCgroup, path)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Dir is the cgroup's directory.
func (c *Cgroup) Dir() string { return c.dir }

// FD is an open descriptor of the cgroup's directory, for
// syscall.SysProcAttr.CgroupFD (UseCgroupFD): a process started with it is
// born inside the cgroup. It stays valid until Close or Remove.
func (c *Cgroup) FD() int { return int(c.f.Fd()) }

// Procs returns the pids of the processes in the cgroup (not in cgroups
// below it).
func (c *Cgroup) Procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(c.dir, "cgroup.procs"), err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Kill SIGKILLs every process in the cgroup and the cgroups below it
// (cgroup.kill) and blocks until the cgroup is empty or timeout passes. It
// returns how many processes the cgroup held, and an error when it could
// not kill them or they had not all exited in time. A process that exited
// but is not yet reaped by its parent counts as gone.
//
// Start nothing into a cgroup once killed: on some kernels (seen on 6.18)
// processes born into it later (CLONE_INTO_CGROUP) are killed at once.
// Remove it and open a new one instead.
func (c *Cgroup) Kill(timeout time.Duration) (int, error) {
	procs, err := c.Procs()
	if err != nil {
		return 0, err
	}
	kill := filepath.Join(c.dir, "cgroup.kill")
	if err := os.WriteFile(kill, []byte("1"), 0); err != nil {
		return 0, fmt.Errorf("write %s: %w", kill, err)
	}
	return len(procs), c.waitEmpty(time.Now().Add(timeout))
}

// waitEmpty blocks until cgroup.events says "populated 0" or deadline
// passes. The kernel flags cgroup.events (POLLPRI) whenever it changes.
func (c *Cgroup) waitEmpty(deadline time.Time) error {
	name := filepath.Join(c.dir, "cgroup.events")
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	buf := make([]byte, 256)
	for {
		n, err := f.ReadAt(buf, 0)
		if err != nil && n == 0 {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if populated, ok := eventsPopulated(buf[:n]); ok && !populated {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("processes in %s survived cgroup.kill", c.dir)
		}
		// The wait is bounded by a second in case a change went unflagged.
		ms := int(min(left, time.Second).Milliseconds()) + 1
		_, err = unix.Poll([]unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}, ms)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll %s: %w", name, err)
		}
	}
}

// eventsPopulated reads the "populated" key of a cgroup.events file; ok is
// false when the key is missing.
func eventsPopulated(b []byte) (populated, ok bool) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, found := bytes.CutPrefix(line, []byte("populated ")); found {
			return string(bytes.TrimSpace(v)) != "0", true
		}
	}
	return false, false
}

// Remove removes the cgroup, which must be empty (after Kill), and closes
// it. Idempotent once it succeeded.
func (c *Cgroup) Remove() error {
	c.Close()
	if err := unix.Rmdir(c.dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove cgroup %s: %w", c.dir, err)
	}
	return nil
}

// Close closes the cgroup's directory descriptor; the cgroup stays.
// Idempotent.
func (c *Cgroup) Close() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

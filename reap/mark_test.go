package reap

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHasEnv(t *testing.T) {
	const k, v = "BATTY_PROJECT_MARK", "/p/.batty"
	for _, c := range []struct {
		env  string
		want bool
	}{
		{"BATTY_PROJECT_MARK=/p/.batty\x00", true},
		{"A=1\x00BATTY_PROJECT_MARK=/p/.batty\x00B=2\x00", true},
		{"A=1\x00BATTY_PROJECT_MARK=/p/.batty", true}, // last entry, no NUL
		{"BATTY_PROJECT_MARK=/p/.batty/x\x00", false}, // another project below
		{"BATTY_PROJECT_MARK=/p/.batty2\x00", false},  // a longer value
		{"X_BATTY_PROJECT_MARK=/p/.batty\x00", false}, // another variable's tail
		{"A=BATTY_PROJECT_MARK=/p/.batty\x00", false}, // inside a value
		{"BATTY_PROJECT_MARK=\x00", false},
		{"", false},
		{"\x00\x00", false},
	} {
		if got := HasEnv([]byte(c.env), k, v); got != c.want {
			t.Errorf("HasEnv(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}

func FuzzHasEnv(f *testing.F) {
	f.Add([]byte("A=1\x00BATTY_PROJECT_MARK=/p/.batty\x00"), "/p/.batty")
	f.Add([]byte("\x00"), "")
	f.Fuzz(func(t *testing.T, env []byte, value string) {
		got := HasEnv(env, MarkEnv, value)
		want := false
		for _, e := range strings.Split(string(env), "\x00") {
			want = want || e == MarkEnv+"="+value
		}
		if got != want {
			t.Fatalf("HasEnv(%q, %q) = %v, want %v", env, value, got, want)
		}
	})
}

// startMarked starts a process with extra environment entries (and nothing
// of this process's mark) and returns it; cleanup kills and reaps it.
func startMarked(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(filterMark(os.Environ()), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

func filterMark(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, MarkEnv+"=") {
			out = append(out, e)
		}
	}
	return out
}

func alive(pid int) bool {
	p, ok := readProc(pid)
	return ok && p.state != 'Z'
}

// The sweep kills this project's marked processes only: not another
// project's (even one whose path extends this one's), not unmarked ones,
// and not the trees it was told to spare.
func TestSweepMarkedKillsOnlyThisProjectsLeftovers(t *testing.T) {
	dir := t.TempDir()
	mine, other := filepath.Join(dir, ".batty"), filepath.Join(dir, ".batty2")
	leftover := startMarked(t, []string{MarkEnv + "=" + mine}, "sleep", "300")
	others := startMarked(t, []string{MarkEnv + "=" + other}, "sleep", "300")
	below := startMarked(t, []string{MarkEnv + "=" + mine + "/x"}, "sleep", "300")
	unmarked := startMarked(t, nil, "sleep", "300")
	// A live shim of the project, with a marked child of its own.
	shim := startMarked(t, []string{MarkEnv + "=" + mine}, "/bin/sh", "-c", "sleep 300 & wait")
	waitMarked(t, mine, 3)

	n, err := SweepMarked(MarkEnv, mine, []int{shim.Process.Pid}, 10*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("SweepMarked = %d, %v; want 1, nil", n, err)
	}
	if alive(leftover.Process.Pid) {
		t.Fatal("the project's leftover survived the sweep")
	}
	for name, c := range map[string]*exec.Cmd{"another project's": others, "a longer path's": below, "an unmarked": unmarked, "the spared shim's": shim} {
		if !alive(c.Process.Pid) {
			t.Errorf("the sweep killed %s process", name)
		}
	}
	if got := Marked(MarkEnv, mine); len(got) != 2 {
		t.Errorf("marked after the sweep: %v, want the spared shim and its child", got)
	}
	// Nothing left to kill: a second sweep is a no-op.
	if n, err := SweepMarked(MarkEnv, mine, []int{shim.Process.Pid}, time.Second); n != 0 || err != nil {
		t.Fatalf("second SweepMarked = %d, %v", n, err)
	}
}

// A process that detached into a session of its own, and whose parent
// exited, is still found by its mark and killed.
func TestSweepMarkedFindsDetachedProcesses(t *testing.T) {
	mark := filepath.Join(t.TempDir(), ".batty")
	sh := exec.Command("/bin/sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!")
	sh.Env = append(filterMark(os.Environ()), MarkEnv+"="+mark)
	out, _ := sh.StdoutPipe()
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := sh.Wait(); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("shell said %q", line)
	}
	t.Cleanup(func() { reapIfChild(pid) })
	n, err := SweepMarked(MarkEnv, mark, nil, 10*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("SweepMarked = %d, %v; want 1, nil", n, err)
	}
	if alive(pid) {
		t.Fatalf("detached %d survived", pid)
	}
}

// reapIfChild kills pid and reaps it when it is this process's child (a
// subreaper's orphan); other processes are left to their parents.
func reapIfChild(pid int) {
	if p, ok := readProc(pid); ok && p.ppid == os.Getpid() {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
}

// waitMarked waits until at least n processes carry the mark (a child
// exec's with its environment a moment after Start returns).
func waitMarked(t *testing.T, mark string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(Marked(MarkEnv, mark)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("marked: %v, want %d", Marked(MarkEnv, mark), n)
		}
		time.Sleep(5 * time.Millisecond) // another process is starting
	}
}

func TestOwnCgroupDir(t *testing.T) {
	hybrid := "29 23 0:26 / /sys/fs/cgroup/unified rw,relatime shared:5 - cgroup2 cgroup2 rw\n" +
		"30 23 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	unified := "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	nested := "35 24 0:30 /user.slice /mnt/my\\040cg rw - cgroup2 none rw\n"
	for _, c := range []struct {
		cgroup, mounts, want string
	}{
		{"0::/\n", hybrid, "/sys/fs/cgroup/unified"},
		{"4:memory:/x\n0::/a/b.scope\n", unified, "/sys/fs/cgroup/a/b.scope"},
		{"0::/user.slice/u.service\n", nested, "/mnt/my cg/u.service"},
		{"0::/user.sliced\n", nested, ""}, // not below the mount's root
		{"4:memory:/x\n", unified, ""},    // cgroup v1 only
		{"0::/\n", "30 23 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n", ""},
		{"", "", ""},
		{"0::", " - cgroup2", ""},
	} {
		got, err := ownCgroupDir([]byte(c.cgroup), []byte(c.mounts))
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("ownCgroupDir(%q, %q) = %q, %v; want %q", c.cgroup, c.mounts, got, err, c.want)
		}
		if err != nil && !errors.Is(err, ErrNoCgroup) {
			t.Errorf("error %v does not wrap ErrNoCgroup", err)
		}
	}
}

func FuzzOwnCgroupDir(f *testing.F) {
	f.Add([]byte("0::/a\n"), []byte("35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"))
	f.Add([]byte("0::/\n"), []byte("1 2 3 /x /m\\04 - cgroup2\n"))
	f.Fuzz(func(t *testing.T, cgroup, mounts []byte) {
		ownCgroupDir(cgroup, mounts)
	})
}

// A process started into a cgroup is killed with it, though it detached
// and cleared its environment (which hides it from the environ sweep).
// Runs only where this process's cgroup v2 is writable.
func TestCgroupKillsWhatDetachedInside(t *testing.T) {
	cg, err := OpenCgroup("batty-test-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36), true)
	if errors.Is(err, ErrNoCgroup) {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove()
	sh := exec.Command("/bin/sh", "-c", "setsid env -i sleep 300 </dev/null >/dev/null 2>&1 & echo $!")
	sh.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.FD()}
	out, _ := sh.StdoutPipe()
	if err := sh.Start(); err != nil {
		t.Fatalf("start into %s: %v", cg.Dir(), err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := sh.Wait(); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("shell said %q", line)
	}
	t.Cleanup(func() { reapIfChild(pid) })
	procs, err := cg.Procs()
	if err != nil || len(procs) != 1 || procs[0] != pid {
		t.Fatalf("cgroup holds %v (%v), want [%d]", procs, err, pid)
	}
	n, err := cg.Kill(10 * time.Second)
	if err != nil || n != 1 {
		t.Fatalf("Kill = %d, %v; want 1, nil", n, err)
	}
	if alive(pid) {
		t.Fatalf("%d survived cgroup.kill", pid)
	}
	if err := cg.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup %s still there: %v", cg.Dir(), err)
	}
}

func TestOpenCgroupRejectsPaths(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b"} {
		if _, err := OpenCgroup(name, false); err == nil || errors.Is(err, ErrNoCgroup) {
			t.Errorf("OpenCgroup(%q) = %v, want a name error", name, err)
		}
	}
}

// Package reap makes a process the reaper of everything below it (Linux
// child subreaper) and kills what its children leave behind.
//
// Codex starts the model's commands in sessions of their own, so killing
// codex's process group never reaches them. A child subreaper inherits such
// processes when their parents die; a Reaper tells them apart from the
// children the process started itself (managed: their owner reaps them with
// exec.Cmd.Wait), reaps them when they exit and kills them on request.
// A Pidfd waits for the exit of any process, child or not, and signals it.
//
// What outlives its subreapers (the daemon and its shims killed together)
// is found by the project's mark in its environment (MarkEnv, Marked,
// SweepMarked) and, where a cgroup v2 is writable, by the Cgroup it was
// started in.
package reap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process the reaper of every orphan below it
// (prctl PR_SET_CHILD_SUBREAPER); the setting lasts for the process's life
// and is not inherited by its children.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// Reaper tracks the processes this process started with os/exec (managed:
// their owner reaps them with Wait) and reaps every other child the kernel
// hands the subreaper (orphans). Every child must be started through Start:
// the mutex is held across it so an orphan scan never reaps or kills a
// managed child before it is registered. Safe for concurrent use.
type Reaper struct {
	self    int
	mu      sync.Mutex
	managed map[int]bool
}

// New returns a Reaper for this process.
func New() *Reaper {
	return &Reaper{self: os.Getpid(), managed: map[int]bool{}}
}

// Start starts cmd and registers it as managed; its owner must Wait for it
// and then Release it.
func (r *Reaper) Start(cmd *exec.Cmd) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	r.managed[cmd.Process.Pid] = true
	return nil
}

// Release forgets a managed pid once its owner has waited for it.
func (r *Reaper) Release(pid int) {
	r.mu.Lock()
	delete(r.managed, pid)
	r.mu.Unlock()
}

// Managed reports whether pid is a child this process started through
// Start and whose owner has not released it yet.
func (r *Reaper) Managed(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.managed[pid]
}

// Run reaps orphans whenever a child changes state (SIGCHLD); it blocks
// until ctx ends.
func (r *Reaper) Run(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			if zombieChild() {
				r.reapOrphans()
			}
		}
	}
}

// zombieChild reports whether a child of this process has exited and not
// been waited for, without waiting for it (WNOWAIT). Most SIGCHLDs are a
// managed child's, which its owner has often reaped by then: no pass over
// /proc is needed for them. A child exiting after the check sends a
// SIGCHLD of its own.
func zombieChild() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo != 0
}

// reapOrphans waits for every exited child that is not managed.
func (r *Reaper) reapOrphans() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reapIn(listProcs())
}

// reapIn waits for every exited child in procs that is not managed. The
// caller holds r.mu.
func (r *Reaper) reapIn(procs []proc) {
	for _, p := range procs {
		if p.ppid == r.self && p.state == 'Z' && !r.managed[p.pid] {
			var ws unix.WaitStatus
			unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// leftovers returns the live descendants of this process that are not
// managed and not below a managed process, and then reaps the exited
// children that are not managed: one pass over /proc for both (every shim
// makes it at the end of every turn, so its cost grows with everything
// running on the machine).
func (r *Reaper) leftovers() []proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	procs := listProcs()
	defer r.reapIn(procs)
	children := map[int][]proc{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	stack := []int{r.self}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[pid] {
			if r.managed[c.pid] {
				continue
			}
			if c.state != 'Z' || c.ppid == r.self {
				out = append(out, c)
			}
			stack = append(stack, c.pid)
		}
	}
	return out
}

// KillLeftovers SIGKILLs every descendant that is neither managed nor below
// a managed process (and its process group), and reaps them, until none is
// left or timeout passes. It blocks meanwhile, and returns how many
// processes it killed and an error counting the survivors.
func (r *Reaper) KillLeftovers(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	killed := map[int]bool{}
	for {
		left := r.leftovers()
		live := 0
		for _, p := range left {
			if p.state == 'Z' {
				continue
			}
			live++
			if !killed[p.pid] {
				killed[p.pid] = true
				if p.pgid > 1 && p.pgid != r.pgid() {
					unix.Kill(-p.pgid, unix.SIGKILL)
				}
				unix.Kill(p.pid, unix.SIGKILL)
			}
		}
		if live == 0 {
			return len(killed), nil
		}
		if time.Now().After(deadline) {
			return len(killed), fmt.Errorf("%d processes survived SIGKILL for %s", live, timeout)
		}
		time.Sleep(10 * time.Millisecond) // the kernel is tearing them down
	}
}

func (r *Reaper) pgid() int {
	g, _ := unix.Getpgid(r.self)
	return g
}

// proc is one entry of /proc.
type proc struct {
	pid, ppid, pgid int
	state           byte
}

// listProcs reads every process's pid, parent, group and state from /proc.
// Processes that vanish while it reads are skipped.
func listProcs() []proc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]proc, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// readProc parses /proc/<pid>/stat: "pid (comm) state ppid pgrp ...". comm
// may hold spaces and parentheses, so fields are taken after the last ')'.
func readProc(pid int) (proc, bool) {
	// Three system calls, not os.ReadFile's six: every shim reads every
	// process's stat at the end of every turn.
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return proc{}, false
	}
	var buf [1024]byte // the fields wanted come right after comm (at most 64 bytes)
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return proc{}, false
	}
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return proc{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 3 || len(f[0]) != 1 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0]}, true
}

package landing

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/textclip"
)

// verifyKeep is how much of verify's output is held while it runs (the
// end of it); MaxOutputTail of that is kept in the request.
const verifyKeep = 64 << 10

// verifyResult is the outcome of a verify run that ran to its end (or to
// its time limit).
type verifyResult struct {
	Passed bool
	Reason string // why it is red
	Tail   string // the end of its output, at most MaxOutputTail bytes
}

// verify runs the team's verify command for r in the integration
// worktree: `sh -c <verify>`, in its own process group, its environment
// the daemon's plus BATTY_LANDING_AGENT, BATTY_LANDING_BRANCH and
// BATTY_LANDING_BASE. At the time limit the whole group is killed and
// verify is red; when ctx ends it is killed too, and the error is ctx's.
// It returns once the command is reaped. An empty command passes.
func (q *Queue) verify(ctx context.Context, r Request) (verifyResult, error) {
	if q.opt.Verify == "" {
		return verifyResult{Passed: true}, nil
	}
	cmd := exec.Command("sh", "-c", q.opt.Verify)
	cmd.Dir = q.integ
	cmd.Env = append(append([]string(nil), q.env...),
		"BATTY_LANDING_AGENT="+r.Agent, "BATTY_LANDING_BRANCH="+r.Branch, "BATTY_LANDING_BASE="+q.opt.Base)
	out := &tailBuffer{max: verifyKeep}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild still holding the output does not hold Wait up.
	cmd.WaitDelay = time.Second
	var err error
	if q.opt.Starter != nil {
		err = q.opt.Starter.Start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return verifyResult{}, fmt.Errorf("start verify: %w", err)
	}
	pid := cmd.Process.Pid
	if q.opt.Starter != nil {
		defer q.opt.Starter.Release(pid)
	}
	// The shell is waited for without being reaped first: while it is a
	// zombie its pid, the group's id, cannot be reused, so the group can
	// be killed once it exits (what it left running goes too) before
	// Wait reaps it.
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()
	timer := time.NewTimer(q.opt.VerifyTimeout)
	defer timer.Stop()
	stopped := ""
	select {
	case <-exited:
	case <-timer.C:
		stopped = "timeout"
	case <-ctx.Done():
		stopped = "ctx"
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
	err = cmd.Wait()
	switch {
	case stopped == "ctx":
		return verifyResult{}, fmt.Errorf("verify: %w", ctx.Err())
	case stopped == "timeout":
		return verifyResult{Reason: fmt.Sprintf("verify did not finish within %s: killed", q.opt.VerifyTimeout),
			Tail: tail(strings.ToValidUTF8(out.String(), "\uFFFD"), MaxOutputTail)}, nil
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return verifyResult{Passed: true}, nil
	case errors.As(err, &ee):
		return verifyResult{Reason: fmt.Sprintf("verify failed (%s)", ee.ProcessState), Tail: tail(strings.ToValidUTF8(out.String(), "\uFFFD"), MaxOutputTail)}, nil
	}
	return verifyResult{}, fmt.Errorf("verify: %w", err)
}

// tailBuffer keeps the last max bytes written to it. Safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
	cut bool // bytes were dropped from the front
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
		t.cut = true
	}
	return len(p), nil
}

// String returns the bytes kept, at most max, marked when more came.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	} else if !t.cut {
		return string(b)
	}
	return textclip.Truncated + "\n" + string(b)
}

// tail returns the end of s in at most max bytes: s itself when it fits,
// else a mark of the cut and the longest suffix that fits with it, not
// starting inside a UTF-8 character. Pure.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	mark := textclip.Truncated + "\n"
	if max <= len(mark) {
		return textclip.Bytes(mark, max, "")
	}
	i := len(s) - (max - len(mark))
	for j := 0; j < utf8.UTFMax && i < len(s) && !utf8.RuneStart(s[i]); j++ {
		i++
	}
	return mark + s[i:]
}

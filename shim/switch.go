package shim

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/textclip"
)

// storeTimeout bounds one operation on Codex's own thread store (codex
// archive or unarchive, thread/archive or thread/unarchive): each is a
// file move and an index update.
const storeTimeout = 30 * time.Second

// threadStore is what a runtime that keeps a Codex of its own between
// turns does to Codex's thread store: archive (or unarchive, archive
// false) thread id through that Codex. A runtime without it runs the CLI
// (storeCLI).
type threadStore interface {
	store(ctx context.Context, archive bool, id string) error
}

// storeResult is the end of a chore: the archive of thread id in Codex's
// store, and its error.
type storeResult struct {
	id  string
	err error
}

// switchThread applies a SwitchThread between turns: the thread left is
// archived in Codex's store when c asks (a chore that runs before the
// next turn, see startChore), and the next turn resumes c.ThreadID, forks
// it (c.Fork), or starts a fresh thread. The loop goroutine only.
func (s *server) switchThread(c protocol.SwitchThread) {
	prev := s.threadID
	if c.Archive && prev != "" && prev != c.ThreadID {
		s.toArchive = append(s.toArchive, prev)
	}
	s.threadID, s.forkFrom, s.threadUse = "", "", codex.Usage{}
	reason := protocol.ThreadReset
	switch {
	case c.ThreadID != "" && c.Fork:
		s.forkFrom = c.ThreadID
	case c.ThreadID != "":
		s.threadID = c.ThreadID
		s.threadUse = codex.Usage{InputTokens: c.Usage.Input, CachedInputTokens: c.Usage.CachedInput,
			OutputTokens: c.Usage.Output, ReasoningOutputTokens: c.Usage.ReasoningOutput}
		reason = protocol.ThreadRestored
	}
	note := cmp.Or(c.Reason, "requested")
	switch {
	case s.forkFrom != "":
		s.tlog.Notice("thread switched: the next turn forks thread " + s.forkFrom + " (" + note + ")")
	case s.threadID != "":
		s.tlog.Notice("thread switched to " + s.threadID + " (" + note + ")")
	default:
		s.tlog.Notice("thread reset: " + note)
	}
	s.emit(protocol.ThreadChanged{ThreadID: s.threadID, Previous: prev, Reason: reason, Detail: c.Reason})
	s.startChore()
}

// startChore archives the next thread of toArchive in Codex's store, on a
// goroutine of its own, when no turn or chore runs; its end comes back on
// storeDone (storeFinished). A turn waits for it (startNext). The loop
// goroutine only.
func (s *server) startChore() {
	if s.chore || s.cur != nil || len(s.toArchive) == 0 {
		return
	}
	id := s.toArchive[0]
	s.toArchive = s.toArchive[1:]
	s.chore = true
	go func() {
		s.storeDone <- storeResult{id: id, err: s.store(true, id)}
	}()
}

// storeFinished ends a chore: a failure is a warning (Codex's pickers
// still offer the thread; batty's records have it archived all the same),
// then the next chore or the next turn starts.
func (s *server) storeFinished(r storeResult) {
	s.chore = false
	if r.err != nil {
		s.warn("", fmt.Sprintf("thread %s is archived by batty but not in Codex's own store: %v", r.id, r.err))
	} else {
		s.tlog.Notice("thread " + r.id + " archived in Codex's store")
	}
	s.startChore()
	if !s.chore && s.cur == nil && !s.stopping {
		s.startNext()
	}
}

// store archives (archive) or unarchives thread id in Codex's own store,
// through the runtime's Codex when it keeps one (threadStore), else by
// the CLI. It blocks for at most storeTimeout.
func (s *server) store(archive bool, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if ts, ok := s.rt.(threadStore); ok {
		return ts.store(ctx, archive, id)
	}
	return s.storeCLI(ctx, archive, id)
}

// storeCLI runs `codex archive <id>` (or unarchive) in the agent's
// environment, in its own process group, killed with it when ctx ends.
func (s *server) storeCLI(ctx context.Context, archive bool, id string) error {
	if s.binErr != nil {
		return s.binErr
	}
	cmd := exec.Command(s.bin.Path, codex.StoreArgs(archive, id)...)
	cmd.Dir = s.cfg.Cwd
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 2 * time.Second
	if err := s.reaper.Start(cmd); err != nil {
		return fmt.Errorf("start %s: %w", s.bin.Path, err)
	}
	defer s.reaper.Release(cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("codex %s %s: %w: %s", codex.StoreArgs(archive, id)[0], id, err, textclip.Bytes(lastMeaningfulLine(out.String()), 512, textclip.Truncated))
	}
	return nil
}

// repairArchived is the read-repair before a turn that resumes or forks a
// thread Codex's store holds archived (its rollout under
// archived_sessions/: an archive of batty reset, or of a human): Codex
// refuses both, so the thread is unarchived first. It reports whether
// the turn's fork source must be archived again once the turn has ended
// (a fork leaves its source as it found it). The turn's goroutine.
func (s *server) repairArchived(t *turn) (rearchive bool) {
	src := cmp.Or(t.fork, t.threadID)
	if src == "" || !codex.Archived(codex.Home(s.env, s.cfg.Cwd), src) {
		return false
	}
	if err := s.store(false, src); err != nil {
		s.log.Warn("Unarchiving the thread failed", "thread", src, "error", err)
		s.emit(protocol.Warning{MessageID: t.msg.ID, Message: textclip.Bytes("thread "+src+" is archived in Codex's store and could not be unarchived: "+err.Error(), protocol.MaxText, textclip.Truncated)})
		return false
	}
	s.log.Info("Thread unarchived in Codex's store", "thread", src, "fork", t.fork != "")
	return t.fork != ""
}

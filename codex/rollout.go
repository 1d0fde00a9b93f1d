package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/battyhq/batty/atomicfile"
)

// rolloutTail is how much of the end of a rollout file LastRequest reads:
// the last token_count record is written at the end of a turn, after the
// final answer, so it lies within the last few kilobytes unless the answer
// was huge.
const rolloutTail = 4 << 20

// RequestUsage is what Codex recorded about one model request: its input
// (the whole history the model was sent) and output tokens, and the
// context window Codex assumes for the model (0 when not recorded).
type RequestUsage struct {
	Input, Output, Window int64
}

// LastRequest returns the usage of the last model request of a thread, as
// Codex records it in its session log ("rollout") under
// home/sessions/YYYY/MM/DD/rollout-<time>-<threadID>.jsonl: the
// last_token_usage of the last token_count event. `codex exec --json`
// reports only the thread's running total, so this is the only place the
// true size of the last request is found. The rollout is an internal
// format of Codex: any file, line or field that is missing or not as
// expected is an error, never a panic; callers fall back to an estimate.
// It reads the file from its end, 64 KiB first and at most 4 MiB, never
// through a link.
func LastRequest(home, threadID string) (RequestUsage, error) {
	if !IsThreadID(threadID) {
		return RequestUsage{}, fmt.Errorf("rollout of %q: not a thread id", threadID)
	}
	path, err := rolloutPath(home, threadID)
	if err != nil {
		return RequestUsage{}, err
	}
	// The record sits near the end: read the last 64 KiB first, more only
	// when it is not there.
	for n := int64(64 << 10); ; n *= 4 {
		tail, whole, err := readTail(path, min(n, rolloutTail))
		if err != nil {
			return RequestUsage{}, err
		}
		if u, ok := lastTokenCount(tail); ok {
			return u, nil
		}
		if whole || n >= rolloutTail {
			return RequestUsage{}, fmt.Errorf("rollout %s: no token_count record in its last %d bytes", path, len(tail))
		}
	}
}

// readTail returns at most the last n bytes of the regular file path,
// opened without following a link, and whether that is the whole file.
func readTail(path string, n int64) ([]byte, bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false, fmt.Errorf("open rollout: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("stat rollout %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("rollout %s: not a regular file", path)
	}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return nil, false, fmt.Errorf("read rollout %s: %w", path, err)
	}
	return b, off == 0, nil
}

// lastTokenCount finds the last complete token_count record in tail (the
// end of a rollout file) and returns its last request's usage. A record
// without last_token_usage, or with one that has no input, is skipped. It
// is a pure function that never panics.
func lastTokenCount(tail []byte) (RequestUsage, bool) {
	for len(tail) > 0 {
		i := bytes.LastIndexByte(tail, '\n')
		line := tail[i+1:]
		tail = tail[:max(i, 0)]
		if i < 0 {
			tail = nil
		}
		if !bytes.Contains(line, []byte(`"token_count"`)) {
			continue
		}
		if u, err := parseTokenCount(line); err == nil {
			return u, true
		}
	}
	return RequestUsage{}, false
}

// parseTokenCount decodes one rollout line holding a token_count event:
// {"type":"event_msg","payload":{"type":"token_count","info":{
// "last_token_usage":{"input_tokens":N,"output_tokens":N,…},
// "model_context_window":N}}}.
func parseTokenCount(line []byte) (RequestUsage, error) {
	var rec struct {
		Type    string `json:"type"`
		Payload struct {
			Type string `json:"type"`
			Info *struct {
				Last *struct {
					Input  int64 `json:"input_tokens"`
					Output int64 `json:"output_tokens"`
				} `json:"last_token_usage"`
				Window int64 `json:"model_context_window"`
			} `json:"info"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		return RequestUsage{}, err
	}
	p := rec.Payload
	if rec.Type != "event_msg" || p.Type != "token_count" || p.Info == nil || p.Info.Last == nil || p.Info.Last.Input <= 0 ||
		p.Info.Last.Output < 0 || p.Info.Window < 0 {
		return RequestUsage{}, errors.New("not a token_count record with the last request's usage")
	}
	return RequestUsage{Input: p.Info.Last.Input, Output: p.Info.Last.Output, Window: p.Info.Window}, nil
}

// rolloutPath returns the newest rollout file of threadID under home
// (home/sessions/YYYY/MM/DD/rollout-<time>-<threadID>.jsonl), or, when
// Codex's store holds the thread archived, its rollout under
// home/archived_sessions/.
func rolloutPath(home, threadID string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+threadID+".jsonl"))
	if err == nil && len(matches) == 0 {
		matches, err = filepath.Glob(filepath.Join(home, ArchivedDir, "rollout-*-"+threadID+".jsonl"))
	}
	if err != nil || len(matches) == 0 {
		return "", fmt.Errorf("rollout of thread %s: none under %s", threadID, filepath.Join(home, "sessions"))
	}
	sort.Strings(matches) // by date and start time: the newest last
	return matches[len(matches)-1], nil
}

// ArchivedDir is the directory of $CODEX_HOME where Codex keeps the
// rollouts of the threads it archived (codex archive, thread/archive).
const ArchivedDir = "archived_sessions"

// HasRollout reports whether Codex home has a rollout of threadID, in
// sessions/ or archived.
func HasRollout(home, threadID string) bool {
	if !IsThreadID(threadID) {
		return false
	}
	_, err := rolloutPath(home, threadID)
	return err == nil
}

// Archived reports whether Codex home holds threadID archived: its rollout
// is under archived_sessions/ and none under sessions/.
func Archived(home, threadID string) bool {
	if !IsThreadID(threadID) {
		return false
	}
	p, err := rolloutPath(home, threadID)
	return err == nil && filepath.Base(filepath.Dir(p)) == ArchivedDir
}

// CarryThread copies the rollout of threadID from the Codex home from into
// the home to, at the same path below sessions/, so that codex run with
// CODEX_HOME=to resumes the thread with its whole history (`codex exec
// resume` and the app-server's thread/resume find a thread by its rollout
// file). The newest rollout of the thread in from is copied; a copy already
// in to at that path (an earlier move) is replaced atomically: temporary
// file, fsync, rename, fsync of the directory. Neither the source nor any
// directory below to (which must exist; it may be a link) is followed
// through a symbolic link; directories made are 0700, the file 0600. It returns the copy's path. Idempotent; it
// blocks for the copy (a rollout is megabytes at most for most threads).
func CarryThread(from, to, threadID string) (string, error) {
	if !IsThreadID(threadID) {
		return "", fmt.Errorf("carry thread %q: not a thread id", threadID)
	}
	src, err := rolloutPath(from, threadID)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(from, src)
	if err != nil {
		return "", fmt.Errorf("carry thread %s: %w", threadID, err)
	}
	in, err := atomicfile.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return "", fmt.Errorf("carry thread %s: %w", threadID, err)
	}
	defer in.Close()
	d, err := atomicfile.OpenDirBeneath(to, filepath.Dir(rel), true)
	if err != nil {
		return "", fmt.Errorf("carry thread %s: %w", threadID, err)
	}
	defer d.Close()
	name := filepath.Base(rel)
	if err := d.WriteVia(d, name, 0o600, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	}); err != nil {
		return "", fmt.Errorf("carry thread %s to %s: %w", threadID, to, err)
	}
	return filepath.Join(to, rel), nil
}

// Package cockpit drives the tmux cockpit of a running team: a session on
// a private tmux server with an orchestrator pane (a readable feed of the
// team's events) and one pane per agent following its transcript, whose
// titles show each agent's live state.
//
// The server is private to the project: `tmux -L <Socket>`, never the
// user's default server, so nothing batty does touches the user's own
// sessions. Every tmux invocation goes through a Runner, so tests count
// them and the daemon can start them as children it owns.
package cockpit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoTmux is returned (wrapped) when tmux is not on the PATH.
var ErrNoTmux = errors.New("tmux not found on PATH")

// InstallHint says how to get tmux, or do without it.
const InstallHint = "install tmux (Debian/Ubuntu: sudo apt-get install tmux; Fedora: sudo dnf install tmux; macOS: brew install tmux), or run without the cockpit: batty start --no-tmux"

// LookTmux returns the path of the tmux binary, or an error wrapping
// ErrNoTmux that says how to install it.
func LookTmux() (string, error) {
	p, err := exec.LookPath("tmux")
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrNoTmux, InstallHint)
	}
	return p, nil
}

// Runner runs one tmux client invocation with args (a command list, as on
// tmux's command line, commands separated by ";") and returns its standard
// output. Implementations must be safe for concurrent use.
type Runner interface {
	Run(ctx context.Context, args ...string) (string, error)
}

// ExecRunner runs the tmux binary Bin against the private server Socket
// (`tmux -L Socket args...`).
type ExecRunner struct {
	Bin    string
	Socket string
	// Env is the environment of tmux (nil: this process's). A server
	// started by this runner gives it to the panes.
	Env []string
	// Exec runs a prepared command to completion (nil: cmd.Run). The daemon
	// sets it to run tmux as a child its subreaper leaves alone.
	Exec func(cmd *exec.Cmd) error
}

// Run runs `tmux -L Socket args...`. The error carries tmux's message.
func (r ExecRunner) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.Bin, append([]string{"-L", r.Socket}, args...)...)
	cmd.Env = r.Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	run := r.Exec
	if run == nil {
		run = (*exec.Cmd).Run
	}
	if err := run(cmd); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return out.String(), &Error{Args: args, Msg: msg, Err: err}
	}
	return out.String(), nil
}

// Error is a failed tmux invocation.
type Error struct {
	Args []string
	Msg  string // what tmux printed
	Err  error
}

func (e *Error) Error() string {
	name := "tmux"
	if len(e.Args) > 0 {
		name += " " + e.Args[0]
	}
	if e.Msg != "" {
		return fmt.Sprintf("%s: %s (%v)", name, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %v", name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// NoServer reports whether err says that no tmux server runs on the socket
// (or that the session is gone): the cockpit is simply not there. A pure
// classifier of tmux's messages.
func NoServer(err error) bool {
	var te *Error
	if !errors.As(err, &te) {
		return false
	}
	m := strings.ToLower(te.Msg)
	for _, s := range []string{"no server running", "error connecting to", "can't find session", "no such file or directory", "server exited unexpectedly", "lost server"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// serverGone reports whether err is the race of a session created just as
// the previous server on the socket exits: worth one more try.
func serverGone(err error) bool {
	var te *Error
	if !errors.As(err, &te) {
		return false
	}
	m := strings.ToLower(te.Msg)
	return strings.Contains(m, "server exited unexpectedly") || strings.Contains(m, "lost server") ||
		strings.Contains(m, "error connecting to")
}

// SocketName returns the name of the project's private tmux server: "batty-",
// up to 16 safe characters of the project directory's name, and a short
// hash of its absolute path. It is stable for a project (whatever its team
// file says), differs between projects, and is short enough for a socket
// path. Pure but for resolving a relative projectDir.
func SocketName(projectDir string) string {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		abs = projectDir
	}
	abs = filepath.Clean(abs)
	sum := sha256.Sum256([]byte(abs))
	name := safeName(filepath.Base(abs), 16)
	if name == "" || strings.Trim(name, "-") == "" {
		name = "project"
	}
	return "batty-" + name + "-" + hex.EncodeToString(sum[:4])
}

// SessionName returns the tmux session name for a team: its name with the
// characters tmux does not take in a session name (".", ":") and anything
// outside [A-Za-z0-9_-] replaced by "-".
func SessionName(teamName string) string {
	if s := safeName(teamName, 64); s != "" {
		return s
	}
	return "batty"
}

func safeName(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= limit {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

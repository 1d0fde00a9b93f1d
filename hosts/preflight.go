package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/team"
)

// maxPreflightRequest bounds the request ServePreflight reads.
const maxPreflightRequest = 1 << 20

// preflightRequest is what Preflight sends the host's batty on its stdin:
// the target, whose environment may hold secrets (never on argv).
type preflightRequest struct {
	Bin    string            `json:"bin"`
	Home   string            `json:"home,omitempty"`
	Env    []string          `json:"env,omitempty"`
	Cwd    string            `json:"cwd,omitempty"`
	Config map[string]string `json:"config,omitempty"`
	Args   []string          `json:"args,omitempty"`
}

// preflightAnswer is the one JSON line the host's batty answers.
type preflightAnswer struct {
	// Problem is nil when codex runs there.
	Problem *preflightProblem `json:"problem"`
	// Bin is the codex executable the target runs there, Version what its
	// `--version` printed, Home its CODEX_HOME, LoggedIn whether `codex
	// login status` said logged in ("", false when unknown; a batty older
	// than these fields sends none).
	Bin      string `json:"bin,omitempty"`
	Version  string `json:"version,omitempty"`
	Home     string `json:"home,omitempty"`
	LoggedIn bool   `json:"logged_in,omitempty"`
}

type preflightProblem struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// ExpandHome expands a leading "~" or "~/" of path to home (nothing when
// home is ""). Pure.
func ExpandHome(path, home string) string {
	if home == "" {
		return path
	}
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}

// ServePreflight is the host's end of Preflight (`batty preflight
// --json`): it reads one request (a JSON target, at most 1 MiB) from in,
// runs c.Check for it on this machine (a leading "~/" of its bin, home
// and cwd is this user's home directory) and writes the answer to out as one
// JSON line. It blocks for the check; ctx cuts it short. The error is for
// a request it cannot read or an answer it cannot write.
func ServePreflight(ctx context.Context, in io.Reader, out io.Writer, c *preflight.Checker) error {
	data, err := io.ReadAll(io.LimitReader(in, maxPreflightRequest+1))
	if err != nil {
		return fmt.Errorf("reading the preflight request: %w", err)
	}
	if len(data) > maxPreflightRequest {
		return fmt.Errorf("preflight request larger than %d bytes", maxPreflightRequest)
	}
	var req preflightRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return fmt.Errorf("reading the preflight request: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	for _, p := range []*string{&req.Bin, &req.Home, &req.Cwd} {
		*p = ExpandHome(*p, home)
	}
	r := c.Inspect(ctx, preflight.Target(req))
	ans := preflightAnswer{Bin: r.Binary.Path, Version: r.Version, Home: r.Home, LoggedIn: r.LoggedIn}
	if p := r.Problem; p != nil {
		ans.Problem = &preflightProblem{Kind: string(p.Kind), Detail: p.Detail, Fix: p.Fix}
	}
	line, err := json.Marshal(ans)
	if err != nil {
		return fmt.Errorf("preflight answer: %w", err)
	}
	if _, err := out.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing the preflight answer: %w", err)
	}
	return nil
}

// Preflight runs the check of an agent's Codex (package preflight) on h,
// with the batty installed there at batty (EnsureBatty's path): `batty
// preflight --json` in the target's directory there, the target on its
// stdin. It returns the problem found, its detail and fix naming the host,
// or nil when codex runs there; the error says the host could not be
// asked. t.Cwd, t.Home and t.Bin are paths on the host. It blocks for the
// check (two codex runs of the host's default timeout at most); ctx cuts
// it short.
func Preflight(ctx context.Context, tr *Transport, h team.Host, batty string, t preflight.Target) (*preflight.Problem, error) {
	r, err := Inspect(ctx, tr, h, batty, t)
	return r.Problem, err
}

// Inspect is Preflight with what the host's check found besides the
// problem: the codex binary there (its Path only), its version, its
// CODEX_HOME and whether it is logged in (see preflight.Report; the
// login decision is not sent back).
func Inspect(ctx context.Context, tr *Transport, h team.Host, batty string, t preflight.Target) (preflight.Report, error) {
	req, err := json.Marshal(preflightRequest(t))
	if err != nil {
		return preflight.Report{}, fmt.Errorf("preflight on %s: %w", h.Name, err)
	}
	out, err := tr.Run(ctx, h, "exec "+ShellCommand(batty, "preflight", "--json"), bytes.NewReader(req))
	if err != nil {
		return preflight.Report{}, fmt.Errorf("preflight on %s: %w", h.Name, err)
	}
	ans, err := parseAnswer(out)
	if err != nil {
		return preflight.Report{}, fmt.Errorf("preflight on %s: %w", h.Name, err)
	}
	r := preflight.Report{Binary: codex.Binary{Path: ans.Bin}, Version: ans.Version, Home: ans.Home, LoggedIn: ans.LoggedIn}
	if ans.Problem == nil {
		return r, nil
	}
	p := &preflight.Problem{Kind: preflight.Kind(ans.Problem.Kind), Detail: "on host " + h.Name + ": " + ans.Problem.Detail}
	if ans.Problem.Fix != "" {
		p.Fix = "on " + h.Name + ": " + ans.Problem.Fix
	}
	r.Problem = p
	return r, nil
}

// PreflightLimit bounds a Preflight whose codex runs each take at most
// check (0: preflight.DefaultTimeout): two of them and the connection.
// It is a pure function.
func PreflightLimit(check time.Duration) time.Duration {
	if check <= 0 {
		check = preflight.DefaultTimeout
	}
	return 2*check + ShimHandshakeTimeout
}

// parseAnswer finds the answer in out: its last line that starts with
// "{" (a login shell may print lines of its own before it). Pure.
func parseAnswer(out []byte) (preflightAnswer, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if !bytes.HasPrefix(l, []byte("{")) {
			continue
		}
		var ans preflightAnswer
		if err := json.Unmarshal(l, &ans); err != nil {
			return ans, fmt.Errorf("unreadable answer %q: %w", clip(l), err)
		}
		if ans.Problem != nil && ans.Problem.Detail == "" {
			return ans, fmt.Errorf("answer without a detail: %q", clip(l))
		}
		return ans, nil
	}
	return preflightAnswer{}, errors.New("no answer: " + fmt.Sprintf("%q", clip(out)))
}

// Unreachable is the problem of a host that could not be reached (err),
// with the fix: the ssh command, or the host's command, that must work
// from here without a prompt; then is appended to the fix (e.g. "then
// `batty resume`"), "" for nothing.
func Unreachable(h team.Host, err error, then string) *preflight.Problem {
	fix := "check that `ssh " + h.SSH + " true` works from here without a prompt (a key, its host key in known_hosts)"
	if h.SSH == "" {
		fix = "check that the host's command (" + strings.Join(h.Command, " ") + " true) works from here"
	}
	if then != "" {
		fix += ", " + then
	}
	return &preflight.Problem{Kind: preflight.KindHost, Detail: err.Error(), Fix: fix}
}

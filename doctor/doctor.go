// Package doctor says whether this machine can run a team (`batty
// doctor`): batty's version, the Codex CLI each agent would run and each
// account's login, Codex's sandbox, git and tmux, free disk and memory
// against the team's needs, and each host with batty and codex there.
//
// It works in two steps: Gather runs the checks of the packages that own
// them (preflight, sandbox, hosts) and reads the machine, into Facts;
// Decide, a pure function, turns the Facts into one Check per line, each
// with its result and, for a failure, the fix.
package doctor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
)

// Status is a check's result.
type Status string

// Results.
const (
	// OK: nothing to do.
	OK Status = "ok"
	// Warn: the team runs, but something deserves a look (an untested
	// Codex, tmux missing, little memory).
	Warn Status = "warn"
	// Fail: something the team needs does not work here; the fix says
	// what to do.
	Fail Status = "fail"
	// Skip: not checked, and why (an earlier failure, not needed).
	Skip Status = "skip"
)

// Check is one line of the report.
type Check struct {
	// Name says what was checked: "batty", "codex", "login", "sandbox",
	// "appserver", "git", "tmux", "disk", "memory", "host".
	Name string `json:"name"`
	// Subject says for whom or where: the agents, the account, the host
	// ("" for the machine).
	Subject string `json:"subject,omitempty"`
	// Status is the result.
	Status Status `json:"status"`
	// Detail is what was found.
	Detail string `json:"detail"`
	// Fix is what to do, for a failure or a warning ("" when nothing).
	Fix string `json:"fix,omitempty"`
}

// Failed reports whether any check failed.
func Failed(checks []Check) bool {
	for _, c := range checks {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// Facts are what Gather found.
type Facts struct {
	// Batty is this batty's version line ("batty v1.2.3 (protocol 4)").
	Batty string
	// Codex are the checks of each distinct way the team's agents run
	// Codex, here and on hosts, on each of their accounts.
	Codex []CodexFacts
	// Sandbox are the trials of Codex's sandbox here, one per codex
	// binary that runs sandboxed commands.
	Sandbox []SandboxFacts
	// Git and Tmux are the tools here.
	Git, Tmux Tool
	// NeedGit is set when the team has worktree agents (git is then
	// required).
	NeedGit bool
	// Disk is the free space where the team writes.
	Disk Space
	// Memory is the memory available here.
	Memory Space
	// Hosts are the team's hosts its agents run on.
	Hosts []HostFacts
	// Shared are the running team's shared app-servers (none when the
	// team does not run or has no per-account agent).
	Shared []SharedFacts
}

// CodexFacts is one preflight target and what its check found.
type CodexFacts struct {
	// Agents are the agents that run it (several share a target).
	Agents []string
	// Account is the account's name when the target is a role's account
	// ("" for the agents' own codex_home).
	Account string
	// Host is the host it runs on ("" for this machine).
	Host string
	// Target is how the agents run Codex (paths as the host sees them).
	Target preflight.Target
	// Report is what the check found; when the host could not be asked,
	// Report.Problem says why.
	Report preflight.Report
	// Skipped says why it was not checked ("" when it was).
	Skipped string
}

// SandboxFacts is one trial of Codex's sandbox.
type SandboxFacts struct {
	// Bin is the codex binary, as the team file names it.
	Bin string
	// For names who runs commands in it ("the agents eng, ops", "the
	// team's verify and setup").
	For string
	// Err is why the trial failed, "" when it passed.
	Err string
	// Skipped says why it was not tried ("" when it was).
	Skipped string
}

// Tool is a program batty runs.
type Tool struct {
	// Version is its version line, "" when it was not found.
	Version string
	// Err is why it was not found or did not run.
	Err string
}

// Space is an amount free against an amount needed, in bytes.
type Space struct {
	// Where is the directory (disk) or "" (memory).
	Where string
	// Free is what is available, Need what the team needs.
	Free, Need uint64
	// Err is why it could not be read ("" when Free is known).
	Err string
}

// HostFacts is one host.
type HostFacts struct {
	// Host is the host as the team file defines it.
	Host team.Host
	// Batty is where batty is installed there (EnsureBatty), "" when not.
	Batty string
	// Unreachable is why the host could not be reached ("" when it was).
	Unreachable string
	// Install is why batty could not be installed or run there (it says
	// what to build and where to copy it).
	Install string
}

// Decide turns facts into the report's checks, in the order of Facts'
// fields. It is a pure function.
func Decide(f Facts) []Check {
	checks := []Check{{Name: "batty", Status: OK, Detail: f.Batty}}
	for _, h := range f.Hosts {
		checks = append(checks, hostCheck(h))
	}
	for _, c := range f.Codex {
		checks = append(checks, codexCheck(c), loginCheck(c))
	}
	for _, s := range f.Sandbox {
		checks = append(checks, sandboxCheck(s))
	}
	for _, s := range f.Shared {
		checks = append(checks, sharedCheck(s))
	}
	checks = append(checks, gitCheck(f.Git, f.NeedGit), tmuxCheck(f.Tmux),
		spaceCheck("disk", f.Disk, Fail), spaceCheck("memory", f.Memory, Warn))
	return checks
}

// subject names the agents of c, with the account and the host.
func subject(c CodexFacts) string {
	s := strings.Join(c.Agents, ", ")
	if c.Account != "" {
		s += " on account " + c.Account
	}
	if c.Host != "" {
		s += " on host " + c.Host
	}
	return s
}

// codexProblem reports whether p is about the binary or CODEX_HOME (the
// codex check's), not the login (the login check's).
func codexProblem(p *preflight.Problem) bool {
	return p != nil && p.Kind != preflight.KindLogin && p.Kind != preflight.KindLoginCheck
}

func codexCheck(c CodexFacts) Check {
	ch := Check{Name: "codex", Subject: subject(c)}
	r := c.Report
	if c.Skipped != "" {
		ch.Status, ch.Detail = Skip, c.Skipped
		return ch
	}
	if codexProblem(r.Problem) {
		ch.Status, ch.Detail, ch.Fix = Fail, r.Problem.Detail, r.Problem.Fix
		return ch
	}
	ch.Status = OK
	ch.Detail = "codex " + or(r.Version, "(version unknown)") + " at " + r.Binary.Path
	switch {
	case r.Binary.Launcher != "":
		ch.Detail += " (native binary, bypassing the npm launcher " + r.Binary.Launcher + ")"
	case c.Host == "":
		ch.Detail += " (native binary)"
	}
	if w := codex.VersionWarning(r.Version); w != "" {
		ch.Status, ch.Detail = Warn, ch.Detail+": "+w
		ch.Fix = "install a tested version (npm install -g @openai/codex@" + codex.Version + "), or check this one as docs/doctor.md says"
	} else if r.Version != "" {
		ch.Detail += ", a version batty is tested with"
	}
	return ch
}

func loginCheck(c CodexFacts) Check {
	ch := Check{Name: "login", Subject: subject(c)}
	r := c.Report
	home := r.Home
	if home == "" {
		home = c.Target.Home
	}
	switch {
	case c.Skipped != "":
		ch.Status, ch.Detail = Skip, c.Skipped
	case codexProblem(r.Problem):
		ch.Status, ch.Detail = Skip, "not checked: codex does not run"
	case r.Problem != nil:
		ch.Status, ch.Detail, ch.Fix = Fail, r.Problem.Detail, r.Problem.Fix
	case r.LoggedIn:
		ch.Status, ch.Detail = OK, "logged in (CODEX_HOME "+home+")"
	case r.Login.Provider != "" && !r.Login.Needed:
		ch.Status, ch.Detail = OK, "no login needed: "+r.Login.Why
	default:
		// A host's answer says whether it is logged in, not whether it
		// needs to be: no problem there means it can run.
		ch.Status, ch.Detail = OK, "codex can run there (CODEX_HOME "+home+")"
	}
	return ch
}

func sandboxCheck(s SandboxFacts) Check {
	ch := Check{Name: "sandbox", Subject: s.For}
	if s.Skipped != "" {
		ch.Status, ch.Detail = Skip, s.Skipped
		return ch
	}
	if s.Err == "" {
		ch.Status, ch.Detail = OK, "`"+or(s.Bin, codex.DefaultBinary)+" sandbox` runs a command that writes its directory"
		return ch
	}
	ch.Status, ch.Detail, ch.Fix = Fail, s.Err, sandbox.TrialFix(s.Bin)
	return ch
}

func gitCheck(t Tool, need bool) Check {
	ch := Check{Name: "git"}
	switch {
	case t.Version != "":
		ch.Status, ch.Detail = OK, t.Version
	case need:
		ch.Status, ch.Detail, ch.Fix = Fail, "git not found: "+t.Err+"; the team's worktree agents need it", "install git (apt-get install git, brew install git)"
	default:
		ch.Status, ch.Detail, ch.Fix = Warn, "git not found: "+t.Err, "install git for worktree agents, batty diff and batty merge (apt-get install git, brew install git)"
	}
	return ch
}

func tmuxCheck(t Tool) Check {
	ch := Check{Name: "tmux"}
	if t.Version != "" {
		ch.Status, ch.Detail = OK, t.Version
		return ch
	}
	ch.Status, ch.Detail = Warn, "tmux not found: "+t.Err+"; batty start opens no cockpit"
	ch.Fix = "install tmux (apt-get install tmux, brew install tmux), or run batty start --no-tmux and watch agents with batty logs -f"
	return ch
}

// spaceCheck checks free space against the need: below it is short (Fail
// or Warn), unreadable a warning.
func spaceCheck(name string, s Space, short Status) Check {
	ch := Check{Name: name, Subject: s.Where}
	switch {
	case s.Err != "":
		ch.Status, ch.Detail = Warn, "could not read the free "+name+": "+s.Err
	case s.Free < s.Need:
		ch.Status = short
		ch.Detail = fmt.Sprintf("%s free, the team needs about %s", Bytes(s.Free), Bytes(s.Need))
		if name == "disk" {
			ch.Fix = "free space on the file system of " + s.Where + " (old worktrees: batty workspace prune)"
		} else {
			ch.Fix = "close other programs, or run fewer agents here (instances, or hosts in the team file)"
		}
	default:
		ch.Status = OK
		ch.Detail = fmt.Sprintf("%s free, the team needs about %s", Bytes(s.Free), Bytes(s.Need))
	}
	return ch
}

func hostCheck(h HostFacts) Check {
	ch := Check{Name: "host", Subject: h.Host.Name}
	switch {
	case h.Unreachable != "":
		p := hosts.Unreachable(h.Host, errors.New(h.Unreachable), "")
		ch.Status, ch.Detail, ch.Fix = Fail, "unreachable: "+p.Detail, p.Fix
		return ch
	case h.Install != "":
		ch.Status, ch.Detail = Fail, "reachable, but batty cannot run there: "+h.Install
		ch.Fix = "build batty for the host's system and copy it where the detail says (or run batty start once the host has it)"
		return ch
	}
	ch.Status, ch.Detail = OK, "reachable, batty at "+h.Batty
	return ch
}

// Bytes shows n bytes in binary units ("1.5 GiB"). It is pure.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

package team

import (
	"slices"
	"strings"
)

// Program is a program the team file names that batty runs as the user,
// outside any sandbox: on_alert, a codex.bin, a host's command.
type Program struct {
	// Key is the trusted setting that names it (see Setting): "on_alert",
	// "codex.bin" (the codex of verify's and setup's sandbox),
	// "roles.<role>.codex.bin", "hosts.<host>.command".
	Key string
	// Line is the line of the team file that sets it; 0 when it is a
	// default (codex.bin unset: "codex" on PATH).
	Line int
	// Argv is the program — an absolute path, or a name looked up on
	// PATH — and its arguments, as batty runs them.
	Argv []string
	// Dir is the directory the program runs in, against which a relative
	// argument is resolved: the team file's directory.
	Dir string
	// Remote is set for the codex.bin of a role whose every agent runs
	// on another host: it is resolved there, not here.
	Remote bool
}

// Programs lists the programs cfg names that batty runs as the user
// outside any sandbox (see Program), in a stable order: on_alert, the
// team's codex.bin when verify or setup run in its sandbox (a team with
// worktree agents), each role's effective codex.bin, each host's
// command. One program set on one line for several roles (the team's
// codex.bin they inherit) is listed once. It is a pure function.
func (c *Config) Programs() []Program {
	var out []Program
	add := func(p Program) {
		if slices.ContainsFunc(out, func(q Program) bool {
			return q.Line == p.Line && q.Remote == p.Remote && slices.Equal(q.Argv, p.Argv)
		}) {
			return
		}
		out = append(out, p)
	}
	if len(c.OnAlert) > 0 {
		add(Program{Key: "on_alert", Line: c.lines["on_alert"], Argv: slices.Clone(c.OnAlert), Dir: c.Dir})
	}
	if c.UsesWorktrees() && !c.Workspace.Sandbox.Off {
		add(Program{Key: "codex.bin", Line: c.lines["codex.bin"], Argv: []string{c.Codex.Bin}, Dir: c.Dir})
	}
	for _, r := range c.Roles {
		line, ok := c.lines["roles."+r.Name+".codex.bin"]
		if !ok {
			line = c.lines["codex.bin"]
		}
		add(Program{Key: "roles." + r.Name + ".codex.bin", Line: line, Argv: []string{r.Codex.Bin}, Dir: c.Dir, Remote: !r.runsHere()})
	}
	for _, h := range c.Hosts {
		if len(h.Command) > 0 {
			add(Program{Key: "hosts." + h.Name + ".command", Line: h.Line, Argv: slices.Clone(h.Command), Dir: c.Dir})
		}
	}
	return out
}

// runsHere reports whether some agent of r runs on this machine.
func (r Role) runsHere() bool {
	for i := range max(r.Instances, 1) {
		idx := i + 1
		if r.Instances <= 1 {
			idx = 0
		}
		if r.host(idx) == "" {
			return true
		}
	}
	return false
}

// ProblemAt is a problem of c's team file at line (0: the whole file),
// named as the parser names its problems, for checks made after loading.
// message and hint are as Problem's.
func (c *Config) ProblemAt(line int, message, hint string) Problem {
	file := c.file
	if file == "" {
		file = c.Path
	}
	return Problem{File: file, Line: line, Message: strings.TrimSpace(message), Hint: hint}
}

package shim

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/shellword"
)

// EnvBatty names the environment variable that holds, for codex and every
// command it runs, the absolute path of the batty binary. A login shell's
// profile resets PATH but keeps it, so `"$BATTY_BIN" send …` works where
// plain `batty` is not found.
const EnvBatty = "BATTY_BIN"

// crewOpen starts the section batty adds to a team agent's instructions;
// battyLine is the line in it that gives the batty command to run.
const (
	crewOpen  = "--- batty: you are part of a team ---"
	battyLine = "Your batty command: "
)

// maxQuotedPath bounds, in bytes once shell-quoted and escaped for TOML,
// a path the section spells out: a longer batty path (or one with a
// control character) is given as "$BATTY_BIN" instead, a longer project
// directory is left out, so that the section always fits
// codex.InstructionsReserve.
const maxQuotedPath = 512

// CrewInstructions is the section batty adds to the standing instructions
// of agent, a member of the team whose project directory is project ("" =
// not said): who the agent is, how to run batty (the command batty, an
// absolute path; "" when unknown) and how replies work. Its TOML-escaped
// text fits codex.InstructionsReserve for any valid agent name. It is a
// pure function; it is the one place that tells agents about batty.
func CrewInstructions(agent, batty, project string) string {
	return CrewInstructionsIn(agent, batty, project, Worktree{})
}

// Worktree is an agent's own git worktree, as batty's section tells it:
// the agent's branch and the team's base branch. The zero Worktree is the
// project's shared checkout.
type Worktree struct {
	Branch, Base string
}

// maxBranchText bounds, in bytes, a branch name the section spells out.
const maxBranchText = 200

// CrewInstructionsIn is CrewInstructions for an agent that works in
// worktree wt: the section also says that batty commits its work after
// every turn and how it lands the branch on the base (batty merge). It
// fits codex.InstructionsReserve as CrewInstructions does. It is a pure
// function.
func CrewInstructionsIn(agent, batty, project string, wt Worktree) string {
	cmd := battyCommand(batty)
	if len(codex.TOMLString(project)) > maxQuotedPath || strings.ContainsFunc(project, isControl) {
		project = ""
	}
	var b strings.Builder
	b.WriteString(crewOpen + "\n")
	b.WriteString("You are " + agent + ", an agent of a team run by batty")
	if project != "" {
		b.WriteString(" (project " + project + ")")
	}
	b.WriteString(". The human and your teammates reach you with batty messages; each message starts a turn of yours.\n\n")
	b.WriteString(battyLine + cmd + "\n")
	b.WriteString("Run batty exactly so, by that path: plain `batty` may not be on your shell's PATH (a login shell resets it); the path is also in $" + EnvBatty + ". For example:\n")
	b.WriteString("  " + cmd + " send <name> \"<message>\"    (<name>: an agent, a role or human)\n")
	b.WriteString("Other batty commands run the same way (" + cmd + " status shows the team). batty send refuses a recipient your role may not message and names those it may.\n")
	b.WriteString("Your team's memory: " + cmd + " search <words> finds the turns of every thread of the team (yours before a reset or a hand-off too) that hold them; " + cmd + " threads show <thread> prints one thread's conversation. Secrets are redacted.\n\n")
	b.WriteString("Replies:\n")
	b.WriteString("- Your final answer of a turn IS your reply to the message of that turn: batty delivers it to the sender. Never use batty send to answer whoever wrote to you: they would get your answer twice.\n")
	b.WriteString("- A message whose header says \"reply to <id>\" is the answer to your message <id>. Your final answer of that turn goes to no one; to go on with that conversation, send a new message with batty send.\n")
	b.WriteString("- Use batty send only to start a conversation: to hand out a task, ask a question, or tell someone who did not write to you.\n")
	if wt.Branch != "" && wt.Base != "" && len(wt.Branch)+len(wt.Base) <= maxBranchText &&
		!strings.ContainsFunc(wt.Branch+wt.Base, isControl) {
		b.WriteString("\nYour workspace: your working directory is your own git worktree, on branch " + wt.Branch + ", made from " + wt.Base + ".\n")
		b.WriteString("- batty commits everything you changed there at the end of each of your turns; do not commit, reset, rebase or switch branches yourself.\n")
		b.WriteString("- When your work is ready to land on " + wt.Base + ", run " + cmd + " merge " + agent + ": batty merges it once the team's checks pass, and tells you if it conflicts or fails.\n")
		b.WriteString("- If batty tells you of a conflict, the conflict markers are in your files: resolve them; batty completes the merge when your turn ends.\n")
	}
	b.WriteString("--- end of batty section ---")
	return b.String()
}

// battyCommand is how the section spells the batty command: batty
// shell-quoted, or "$BATTY_BIN" when batty is unknown or unfit to spell
// out (too long, or holding a control character).
func battyCommand(batty string) string {
	q := shellword.Quote(batty)
	if batty == "" || len(codex.TOMLString(q)) > maxQuotedPath || strings.ContainsFunc(batty, isControl) {
		return `"$` + EnvBatty + `"`
	}
	return q
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// withCrew returns the developer instructions of a shim's agent: its role's
// instructions, then, for an agent of a team (stateDir != ""), batty's
// section naming the project directory project. It is a pure function.
func withCrew(role, agent, batty, stateDir, project string, wt Worktree) string {
	if stateDir == "" {
		return role
	}
	crew := CrewInstructionsIn(agent, batty, project, wt)
	if role == "" {
		return crew
	}
	return role + "\n\n" + crew
}

// stateDirOf returns the value of the last BATTY_DIR entry of env ("" when
// there is none).
func stateDirOf(env []string) string { return agentenv.Lookup(env, agentenv.Dir) }

// chooseBatty picks the batty binary agents are told to run: exe (the
// running binary, as os.Executable reports it; a " (deleted)" suffix, the
// mark of a binary replaced since it started, is dropped: the path then
// names its replacement), else arg0 (the path the parent started this
// process by) when it is absolute; the first that usable accepts wins,
// else exe as it is. It is a pure function; usable tells whether a path
// is a runnable file.
func chooseBatty(exe, arg0 string, usable func(string) bool) string {
	exe = strings.TrimSuffix(exe, " (deleted)")
	var cands []string
	if filepath.IsAbs(exe) {
		cands = append(cands, filepath.Clean(exe))
	}
	if filepath.IsAbs(arg0) {
		cands = append(cands, filepath.Clean(arg0))
	}
	for _, c := range cands {
		if usable(c) {
			return c
		}
	}
	if len(cands) > 0 {
		return cands[0]
	}
	return ""
}

// battyBinary resolves, once at the shim's start, the batty binary its
// agent is told to run (see chooseBatty); "" when none is known.
func battyBinary() string {
	exe, _ := os.Executable() // an error leaves exe "": arg0 is tried
	arg0 := ""
	if len(os.Args) > 0 {
		arg0 = os.Args[0]
	}
	return chooseBatty(exe, arg0, isRunnable)
}

// isRunnable reports whether p is a regular file with an execute bit.
func isRunnable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

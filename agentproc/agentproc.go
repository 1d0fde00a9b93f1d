// Package agentproc tells whether a process runs inside an agent's Codex:
// it reads the process and its ancestors from /proc and recognises the
// batty shims among them. `batty send` asks it who sends a message, the
// daemon who is at the other end of its control socket, and the commands
// that change a stopped team whether an agent runs them.
//
// A shim is a child subreaper, so every process its codex started — even
// one that detached, cleared its environment or lost its parents — has the
// shim as an ancestor while the shim lives.
package agentproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim/shimconfig"
)

// MaxAncestors bounds the walk up a process's parent chain.
const MaxAncestors = 1024

// maxRereads bounds how often one step of the walk is read again when the
// child was given a new parent (its parent exited) while it was read.
const maxRereads = 8

// Process is one process of a chain read by Chain.
type Process struct {
	PID int
	// Agent is the agent the process serves when it is a batty shim (see
	// ShimAgentOf and SameProgram), "" otherwise.
	Agent string
	// Mark is the value of the project mark (reap.MarkEnv) in a shim's
	// environment as it started: the .batty directory of the project
	// whose daemon started it ("" when it is not a shim or has none).
	Mark string
}

// Chain returns process pid followed by its ancestors, nearest first, up
// to (not including) pid 1, at most MaxAncestors of them, read from proc
// (the /proc mount). A process is a shim when its command line is `<batty>
// shim <flags naming an agent>` and its executable is batty: the file self
// names or one of the same name (a batty binary replaced or installed
// elsewhere).
//
// Each step is read so that a parent that exits meanwhile cannot be
// mistaken for the process that took its pid: the child's parent (and
// start time) is read again after the parent's files, and the step is read
// afresh when it changed (an ancestor exited and its child was handed to
// a subreaper). That pid still names the process the caller means is the
// caller's to make sure of (a pidfd, as the control socket does). The
// error says that pid itself could not be read or exited meanwhile, or
// that the chain kept changing; an ancestor that cannot be read (hidden)
// ends the chain without one.
func Chain(proc string, pid int, self string) ([]Process, error) {
	first, err := readStat(proc, pid)
	if err != nil {
		return nil, err
	}
	for range maxRereads {
		st, err := readStat(proc, pid)
		if err != nil || st.start != first.start {
			return nil, fmt.Errorf("process %d exited while its parents were read", pid)
		}
		chain, complete := walk(proc, pid, st, self)
		if complete {
			return chain, nil
		}
	}
	return nil, fmt.Errorf("the parents of process %d kept changing while they were read", pid)
}

// walk reads the chain of pid, whose stat is st (see Chain), and reports
// false when a process of it exited or was given a new parent meanwhile:
// the chain is to be read again.
func walk(proc string, pid int, st stat, self string) ([]Process, bool) {
	chain := []Process{describe(proc, pid, self)}
	for len(chain) <= MaxAncestors && st.ppid > 1 {
		child := chain[len(chain)-1].PID
		pst, perr := readStat(proc, st.ppid)
		p := describe(proc, st.ppid, self)
		again, err := readStat(proc, child)
		if err != nil || again.start != st.start || again.ppid != st.ppid {
			return nil, false
		}
		if perr != nil {
			// Still the parent, but hidden: the chain ends here.
			break
		}
		chain = append(chain, p)
		st = pst
	}
	return chain, true
}

// describe reads whether process pid is a batty shim, and its agent and
// mark when it is.
func describe(proc string, pid int, self string) Process {
	p := Process{PID: pid}
	dir := filepath.Join(proc, strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return p
	}
	agent, ok := ShimAgentOf(cmdline)
	if !ok {
		return p
	}
	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	if err != nil || !SameProgram(exe, self) {
		return p // not ours to look at, or not batty: no shim of ours
	}
	p.Agent = agent
	if env, err := os.ReadFile(filepath.Join(dir, "environ")); err == nil {
		p.Mark = EnvValue(env, reap.MarkEnv)
	}
	return p
}

// OutermostShim returns the outermost shim of chain (see Chain), and
// false when it holds none. The outermost is the one a daemon started: a
// shim the agent's own commands started (batty chat, or a forged command
// line) lies below it. It is a pure function.
func OutermostShim(chain []Process) (Process, bool) {
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i].Agent != "" {
			return chain[i], true
		}
	}
	return Process{}, false
}

// ShimAgent returns the agent of the outermost batty shim among the
// ancestors of process pid (pid itself not included), read from proc, or
// "" when there is none (see Chain and OutermostShim). The error says that
// pid or its parent could not be read.
func ShimAgent(proc string, pid int, self string) (string, error) {
	chain, err := Chain(proc, pid, self)
	if err != nil {
		return "", err
	}
	s, _ := OutermostShim(chain[1:])
	return s.Agent, nil
}

// stat is what the walk reads of /proc/<pid>/stat.
type stat struct {
	ppid  int
	start uint64 // clock ticks after boot
}

// readStat reads the parent and start time of pid from proc.
func readStat(proc string, pid int) (stat, error) {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}, fmt.Errorf("read the parent of process %d: %w", pid, err)
	}
	st, err := parseStat(b)
	if err != nil {
		return stat{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return st, nil
}

// StatParent returns the parent process id from the text of
// /proc/<pid>/stat: "pid (comm) state ppid …", where comm may hold spaces
// and parentheses. It is a pure function.
func StatParent(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("malformed stat: no parent")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return 0, fmt.Errorf("malformed stat: parent %q", f[1])
	}
	return ppid, nil
}

// parseStat reads the parent and the start time (field 22) from the text
// of /proc/<pid>/stat. It is a pure function.
func parseStat(b []byte) (stat, error) {
	ppid, err := StatParent(b)
	if err != nil {
		return stat{}, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	// After the command name: state(0) ppid(1) … starttime(19).
	if len(f) < 20 {
		return stat{}, errors.New("malformed stat: no start time")
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("malformed stat: start time %q", f[19])
	}
	return stat{ppid: ppid, start: start}, nil
}

// ShimAgentOf returns the agent a process serves when its command line
// (NUL-separated, as /proc/<pid>/cmdline has it) is `<batty> shim
// <flags>` with flags a shim accepts naming an agent. It is a pure
// function.
func ShimAgentOf(cmdline []byte) (string, bool) {
	argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(argv) < 3 || argv[1] != "shim" {
		return "", false
	}
	cfg, _ := shimconfig.ParseArgs(argv[2:]) // a config it would refuse still names its agent
	return cfg.Agent, cfg.Agent != ""
}

// SameProgram reports whether exe, the target of a process's
// /proc/<pid>/exe link, is batty: the program self, or one of the same
// name (" (deleted)" marks a binary replaced or removed since it
// started). It is a pure function.
func SameProgram(exe, self string) bool {
	exe = strings.TrimSuffix(exe, " (deleted)")
	return exe == self || (exe != "" && filepath.Base(exe) == filepath.Base(self))
}

// EnvValue returns the value of key in environ, a process's environment
// as /proc/<pid>/environ holds it (entries ended by NUL bytes), "" when it
// has none. It is a pure function.
func EnvValue(environ []byte, key string) string {
	for e := range bytes.SplitSeq(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(e, []byte(key+"=")); ok {
			return string(v)
		}
	}
	return ""
}

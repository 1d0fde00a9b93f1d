package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/battyhq/batty/shim"
)

// maxAncestors bounds the walk up a process's parent chain.
const maxAncestors = 1024

// shimAncestor returns the agent of the outermost batty shim among the
// ancestors of process pid, read from proc (the /proc mount), or "" when
// there is none. A shim is a process running `<batty> shim --agent NAME …`
// whose executable is batty — the file self names, or one of the same
// name (a batty binary replaced or installed elsewhere). The outermost
// shim is the one the daemon started: a shim the agent's own commands
// started (batty chat, or a forged command line) lies below it. A shim is
// a child subreaper, so every process its codex started, even one that
// detached or cleared its environment, has it as an ancestor while it
// lives. The error says that pid's own parent could not be read.
func shimAncestor(proc string, pid int, self string) (string, error) {
	ppid, err := parentOf(proc, pid)
	if err != nil {
		return "", err
	}
	agent := ""
	for i := 0; ppid > 1 && i < maxAncestors; i++ {
		if a, ok := shimOf(proc, ppid, self); ok {
			agent = a
		}
		if ppid, err = parentOf(proc, ppid); err != nil {
			// Gone meanwhile, or hidden: the chain ends here.
			break
		}
	}
	return agent, nil
}

// parentOf reads the parent process id of pid from proc.
func parentOf(proc string, pid int) (int, error) {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("read the parent of process %d: %w", pid, err)
	}
	ppid, err := statParent(b)
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	return ppid, nil
}

// shimOf reports the agent of process pid when it is a batty shim (see
// shimAncestor).
func shimOf(proc string, pid int, self string) (string, bool) {
	cmdline, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return "", false
	}
	agent, ok := shimAgentOf(cmdline)
	if !ok {
		return "", false
	}
	exe, err := os.Readlink(filepath.Join(proc, strconv.Itoa(pid), "exe"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false // not ours to look at: not a shim of ours
	}
	return agent, err == nil && sameProgram(exe, self)
}

// statParent returns the parent process id from the text of
// /proc/<pid>/stat: "pid (comm) state ppid …", where comm may hold spaces
// and parentheses. It is a pure function.
func statParent(stat []byte) (int, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat: no command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("malformed stat: no parent")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return 0, fmt.Errorf("malformed stat: parent %q", f[1])
	}
	return ppid, nil
}

// shimAgentOf returns the agent a process serves when its command line
// (NUL-separated, as /proc/<pid>/cmdline has it) is `<batty> shim
// <flags>` with flags a shim accepts naming an agent. It is a pure
// function.
func shimAgentOf(cmdline []byte) (string, bool) {
	argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(argv) < 3 || argv[1] != "shim" {
		return "", false
	}
	cfg, _ := shim.ParseArgs(argv[2:]) // a config it would refuse still names its agent
	return cfg.Agent, cfg.Agent != ""
}

// sameProgram reports whether exe, the target of a process's
// /proc/<pid>/exe link, is batty: the program self, or one of the same
// name (" (deleted)" marks a binary replaced or removed since it
// started). It is a pure function.
func sameProgram(exe, self string) bool {
	exe = strings.TrimSuffix(exe, " (deleted)")
	return exe == self || (exe != "" && filepath.Base(exe) == filepath.Base(self))
}

package codextest

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// MarkEnv is the environment variable a test sets, to a value of its own,
// on the processes it starts: everything they start inherits it, so
// Marked finds every descendant, including ones that left the process tree.
const MarkEnv = "BATTY_TEST_MARK"

// Marked returns the live (not zombie) processes other than this one whose
// environment holds MarkEnv=mark.
func Marked(mark string) []int {
	needle := []byte(MarkEnv + "=" + mark + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// Cmdline returns a process's command line with spaces between arguments.
func Cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(bytes.TrimSpace(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// AssertNoMarked fails t for every live process carrying mark, naming it.
func AssertNoMarked(t testing.TB, mark string) {
	t.Helper()
	for _, pid := range Marked(mark) {
		t.Errorf("process left running: %d %s", pid, Cmdline(pid))
	}
}

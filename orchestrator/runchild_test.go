package orchestrator

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// TestRunChildSurvivesTheReaper: a child the daemon runs for itself with
// RunChild (the cockpit's tmux calls) is neither killed when the daemon, a
// child subreaper, kills what a dead shim left, nor reaped under its
// owner: its exit status reaches RunChild. The daemon runs in a process of
// its own, since a subreaper stays one for the life of the process.
func TestRunChildSurvivesTheReaper(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	self, _ := os.Executable()
	cmd := exec.Command(self, p.cfg.Path)
	cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=runchild")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child exited 0") {
		t.Fatalf("runchild: %v\n%s", err, out)
	}
}

// runChildMain runs a subreaper daemon for the team file, runs a child
// with RunChild, kills leftovers while it runs, then lets it exit and
// prints how it ended.
func runChildMain(teamFile string) int {
	cfg, err := team.Load(teamFile)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	l, _ := project.LayoutFor(teamFile)
	self, _ := os.Executable()
	d, err := New(cfg, l, Options{ShimCommand: []string{self}, ShimEnv: append(os.Environ(), "BATTY_TEST_ROLE=shim"), Subreaper: true})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	select {
	case <-d.Ready():
	case err := <-ran:
		fmt.Println("the daemon ended before it was ready:", err)
		cancel()
		return 1
	}
	defer func() { cancel(); <-ran }()

	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	child := exec.Command("/bin/sh", "-c", "echo up; read x; exit 0")
	child.Stdin, child.Stdout = inR, outW
	exited := make(chan error, 1)
	go func() { exited <- d.RunChild(child) }()
	if line, _ := bufio.NewReader(outR).ReadString('\n'); line != "up\n" {
		fmt.Printf("child said %q\n", line)
		return 1
	}
	d.killOrphans("test")
	inW.Close()
	if err := <-exited; err != nil {
		fmt.Println("child:", err)
		return 1
	}
	fmt.Println("child exited 0")
	return 0
}

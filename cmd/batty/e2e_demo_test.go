package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project/projecttest"
	"github.com/battyhq/batty/scriptedmodel"
	"github.com/battyhq/batty/workspaces"
)

// demoCmd prepares `batty demo args…` with its temporary directories in
// tmp and every process it starts marked with mark.
func demoCmd(t *testing.T, tmp, mark string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(buildBatty(t), append([]string{"demo"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, codextest.MarkEnv+"="+mark)
	return cmd
}

// demoDirs lists the demo projects in tmp.
func demoDirs(t *testing.T, tmp string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tmp, "batty-demo-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// The demo runs the whole scripted conversation with the real Codex CLI and
// ends by itself: every agent's final answers are in its transcript (the
// engineers' being their reports, which reach the architect as replies),
// the engineers worked in worktrees of their own and their files reached
// main through two landings, the human got the architect's answer, and
// nothing is left running. The stand-in model calls exec_command as a real
// model does, so its batty sends and merges run in a login shell, by the
// absolute path its instructions give.
func TestE2EDemo(t *testing.T) {
	codexBin := codextest.Codex(t)
	tmp, mark := t.TempDir(), fmt.Sprintf("e2e-demo-%d", time.Now().UnixNano())
	cmd := demoCmd(t, tmp, mark, "--no-tmux", "--keep", "--pace", "0", "--timeout", "2m", "--codex-bin", codexBin)
	out, err := cmd.CombinedOutput()
	codextest.AssertNoMarked(t, mark)
	if err != nil {
		t.Fatalf("batty demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"The model is a SCRIPTED STAND-IN", "No OpenAI account is used and nothing leaves this machine",
		scriptedmodel.AnswerHeading, "batty: stopped", "greeting.txt:", "numbers.txt:", "The demo project is kept in",
		"batty commits engineer-1's turn on batty/engineer-1 (", "batty lands batty/engineer-1 on main (",
		"batty lands batty/engineer-2 on main (", "Done: both engineers' branches landed on main",
		"git log --oneline --graph -n 10 main", "Land batty/engineer-1 (",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	dirs := demoDirs(t, tmp)
	if len(dirs) != 1 {
		t.Fatalf("demo projects in %s: %q", tmp, dirs)
	}
	dir := dirs[0]

	// Every agent's replies, as the script gave them, are in its transcript.
	transcripts := map[string][]string{
		"architect":  {"handed them to engineer-1 and engineer-2", "Noted engineer-", "Every engineer has reported"},
		"engineer-1": {"I wrote greeting.txt; my command printed:"},
		"engineer-2": {"I wrote numbers.txt; my command printed:"},
	}
	for agent, wants := range transcripts {
		b, err := os.ReadFile(filepath.Join(layoutOf(t, dir).Dir, "logs", agent+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s's transcript lacks %q:\n%s", agent, want, b)
			}
		}
	}

	// The engineers' commands really ran, in their working directory, as
	// themselves.
	if b, err := os.ReadFile(filepath.Join(dir, "work", "greeting.txt")); err != nil || string(b) != "Hello from engineer-1.\n" {
		t.Errorf("greeting.txt: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "work", "numbers.txt")); err != nil || string(b) != "1\n2\n3\n4\n5\n" {
		t.Errorf("numbers.txt: %q, %v", b, err)
	}

	// Each engineer worked in a worktree of its own, on its branch; both
	// branches landed on main (merge commits of the merge queue, verify
	// having passed on each), which holds their files, and the project's
	// checkout of main was fast-forwarded to it and is clean.
	git := func(args ...string) string {
		t.Helper()
		out, err := workspaces.Git{Dir: dir, Vars: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}}.Run(context.Background(), args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	worktrees := map[string]string{} // path → its lines of git worktree list
	for block := range strings.SplitSeq(git("worktree", "list", "--porcelain"), "\n\n") {
		path, _, _ := strings.Cut(strings.TrimPrefix(block, "worktree "), "\n")
		worktrees[path] = block
	}
	for _, agent := range []string{"engineer-1", "engineer-2"} {
		wt := filepath.Join(layoutOf(t, dir).WorktreesDir(), agent)
		if fi, err := os.Stat(filepath.Join(wt, "work")); err != nil || !fi.IsDir() {
			t.Errorf("%s's worktree: %v", agent, err)
		}
		if !strings.Contains(worktrees[wt]+"\n", "\nbranch refs/heads/batty/"+agent+"\n") {
			t.Errorf("%s's worktree %s is not registered on its branch: %q", agent, wt, worktrees)
		}
	}
	var lands []string
	for _, subject := range strings.Split(git("log", "--first-parent", "--merges", "--format=%s", "main"), "\n") {
		if strings.HasPrefix(subject, "Land batty/engineer-") {
			lands = append(lands, subject)
		}
	}
	if len(lands) != 2 || !strings.HasPrefix(lands[0], "Land batty/engineer-2 ") || !strings.HasPrefix(lands[1], "Land batty/engineer-1 ") {
		t.Errorf("landings on main: %q", lands)
	}
	if got := git("show", "main:work/greeting.txt"); got != "Hello from engineer-1." {
		t.Errorf("main's greeting.txt: %q", got)
	}
	if got := git("show", "main:work/numbers.txt"); got != "1\n2\n3\n4\n5" {
		t.Errorf("main's numbers.txt: %q", got)
	}
	if head, main := git("rev-parse", "HEAD"), git("rev-parse", "main"); head != main {
		t.Errorf("the project's checkout is at %s, main at %s", head, main)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("the project's checkout is not clean:\n%s", st)
	}

	// The human's inbox holds the architect's answer with both reports.
	store, err := inbox.Open(filepath.Join(layoutOf(t, dir).Dir, "inboxes"))
	if err != nil {
		t.Fatal(err)
	}
	box, err := store.Box("human")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := box.Pending()
	var answer string
	for _, m := range msgs {
		if m.From == "architect" && strings.HasPrefix(m.Body, scriptedmodel.AnswerHeading) {
			answer = m.Body
		}
	}
	if !strings.Contains(answer, "Hello from engineer-1.") || !strings.Contains(answer, "5 numbers.txt") {
		t.Errorf("the human's inbox has no answer with both reports: %+v", msgs)
	}
}

// Ctrl-C in the middle of the demo stops the team, the stand-in model and
// every process they started, and removes the scratch project.
func TestE2EDemoInterrupted(t *testing.T) {
	codexBin := codextest.Codex(t)
	tmp, mark := t.TempDir(), fmt.Sprintf("e2e-demo-int-%d", time.Now().UnixNano())
	// Paced, so that the team is still at work when the signal comes.
	cmd := demoCmd(t, tmp, mark, "--no-tmux", "--pace", "500ms", "--timeout", "2m", "--codex-bin", codexBin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		codextest.AssertNoMarked(t, mark)
	})

	// Wait until an engineer is at work.
	var seen strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "batty delivers architect's message to engineer-1") {
			break
		}
	}
	if sc.Err() != nil || !strings.Contains(seen.String(), "engineer-1") {
		t.Fatalf("the demo ended before an engineer started (%v):\n%s%s", sc.Err(), seen.String(), stderr.String())
	}
	if len(codextest.Marked(mark)) == 0 {
		t.Fatal("no process of the demo runs")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v\n%s%s\n%s", err, seen.String(), rest, stderr.String())
	}
	if !strings.Contains(string(rest), "Interrupted: stopping the team") || !strings.Contains(string(rest), "batty: stopped") ||
		!strings.Contains(stderr.String(), "everything it started is stopped") {
		t.Errorf("output after the signal:\n%s\nstderr:\n%s", rest, stderr.String())
	}
	codextest.AssertNoMarked(t, mark)
	if dirs := demoDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the demo project was left behind: %q", dirs)
	}
}

// Without the Codex CLI the demo says how to get it.
func TestDemoWithoutCodexSaysHowToGetIt(t *testing.T) {
	tmp := t.TempDir()
	cmd := demoCmd(t, tmp, "demo-no-codex", "--no-tmux")
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir(), "BATTY_CODEX_CACHE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v\n%s", err, out)
	}
	for _, want := range []string{"the Codex CLI is not installed", "scripts/demo.sh", "npm install -g @openai/codex@" + codex.Version} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if dirs := demoDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("a demo project was created: %q", dirs)
	}
}

// Without git the demo says how to get it, before it made anything.
func TestDemoWithoutGitSaysHowToGetIt(t *testing.T) {
	tmp := t.TempDir()
	fake := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho codex-cli 0.169.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := demoCmd(t, tmp, "demo-no-git", "--no-tmux", "--codex-bin", fake)
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v\n%s", err, out)
	}
	for _, want := range []string{"git is not installed", "apt-get install git", "run batty demo again"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if dirs := demoDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("a demo project was created: %q", dirs)
	}
}

// A reader that goes away (batty demo | head) does not kill the demo
// before it cleaned up: it plays on and leaves nothing behind.
func TestE2EDemoOutlivesItsReader(t *testing.T) {
	codexBin := codextest.Codex(t)
	tmp, mark := t.TempDir(), fmt.Sprintf("e2e-demo-pipe-%d", time.Now().UnixNano())
	cmd := demoCmd(t, tmp, mark, "--no-tmux", "--pace", "0", "--timeout", "2m", "--codex-bin", codexBin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		codextest.AssertNoMarked(t, mark)
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "batty delivers human's message to architect") {
	}
	stdout.Close() // like head once it has its lines
	if err := cmd.Wait(); err != nil {
		t.Fatalf("batty demo: %v", err)
	}
	codextest.AssertNoMarked(t, mark)
	if dirs := demoDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the demo project was left behind: %q", dirs)
	}
}

// A turn that fails ends the demo at once, naming the failure and
// daemon.log, with nothing left running and the project kept to look at.
func TestDemoFailsFastWhenATurnFails(t *testing.T) {
	tmp, mark := t.TempDir(), fmt.Sprintf("demo-fail-%d", time.Now().UnixNano())
	fake := filepath.Join(projecttest.TempProgramDir(t), "codex") // not under /tmp: batty refuses a codex an agent could rewrite
	script := "#!/bin/sh\ncase \"$1\" in\n--version) echo codex-cli 0.169.0 ;;\nsandbox) exit 0 ;;\n*) echo 'boom: no model here' >&2; exit 1 ;;\nesac\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := demoCmd(t, tmp, mark, "--no-tmux", "--pace", "0", "--timeout", "2m", "--codex-bin", fake)
	out, err := cmd.CombinedOutput()
	codextest.AssertNoMarked(t, mark)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v\n%s", err, out)
	}
	for _, want := range []string{"the demo team did not finish: architect's turn failed", "daemon.log", "The demo project is kept in"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if dirs := demoDirs(t, tmp); len(dirs) != 1 {
		t.Errorf("demo projects kept: %q", dirs)
	}
}

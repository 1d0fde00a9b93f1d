package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/scriptedmodel"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// writeExe writes an executable shell script.
func writeExe(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho codex-cli 0.0.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindCodex(t *testing.T) {
	cache, pathDir := t.TempDir(), t.TempDir()
	t.Setenv("BATTY_CODEX_CACHE", cache)
	t.Setenv("PATH", pathDir)

	// Neither the pinned install nor codex on PATH: say how to get it.
	_, err := FindCodex("")
	if !errors.Is(err, ErrNoCodex) || !strings.Contains(err.Error(), "scripts/demo.sh") ||
		!strings.Contains(err.Error(), "npm install -g @openai/codex@"+codex.Version) {
		t.Fatalf("FindCodex without codex: %v", err)
	}

	// codex on PATH.
	onPath := filepath.Join(pathDir, "codex")
	writeExe(t, onPath)
	if got, err := FindCodex(""); err != nil || got != onPath {
		t.Fatalf("FindCodex with codex on PATH = %q, %v", got, err)
	}

	// The pinned install wins over PATH.
	pinned := filepath.Join(cache, codex.Version, "node_modules", ".bin", "codex")
	writeExe(t, pinned)
	if codex.PinnedLauncher() != pinned {
		t.Fatalf("codex.PinnedLauncher = %q", codex.PinnedLauncher())
	}
	if got, err := FindCodex(""); err != nil || got != pinned {
		t.Fatalf("FindCodex with the pinned install = %q, %v", got, err)
	}

	// An explicit binary is taken as given, and must exist.
	if got, err := FindCodex(onPath); err != nil || got != onPath {
		t.Fatalf("FindCodex(%s) = %q, %v", onPath, got, err)
	}
	if _, err := FindCodex(filepath.Join(pathDir, "missing")); !errors.Is(err, ErrNoCodex) {
		t.Fatalf("FindCodex of a missing file: %v", err)
	}
}

// The scratch project is a valid team: the architect and one engineer per
// task, who may talk to each other, the engineers working in work/ of
// worktrees of their own, their work landing on main once verify passes,
// and Codex pointed at the stand-in through codex-home/. It is a git
// repository on main with one commit holding all but .batty/ and
// codex-home/, from which batty can make an engineer's worktree, work/
// included.
func TestWriteProject(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	codexBin := filepath.Join(t.TempDir(), "codex")
	writeExe(t, codexBin)
	script := scriptedmodel.DemoScript()
	if _, err := writeProject(context.Background(), dir, codexBin, "http://127.0.0.1:9/v1", script); err != nil {
		t.Fatal(err)
	}
	cfg, err := team.Load(filepath.Join(dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range cfg.Agents() {
		names = append(names, a.Name)
		if a.Codex.Bin != codexBin || a.Codex.CodexHome != filepath.Join(dir, "codex-home") {
			t.Errorf("%s's codex settings %+v", a.Name, a.Codex)
		}
		switch a.Role {
		case "architect":
			if a.Instructions != script.ArchitectPrompt || a.Cwd != dir {
				t.Errorf("architect %+v", a)
			}
			if a.Workspace != team.WorkspaceShared || a.Codex.Sandbox != codex.SandboxReadOnly {
				t.Errorf("the architect works in %q, its sandbox %q", a.Workspace, a.Codex.Sandbox)
			}
		case "engineer":
			if a.Instructions != script.EngineerPrompt || a.Cwd != filepath.Join(dir, "work") || a.Workspace != team.WorkspaceWorktree ||
				a.Codex.Sandbox != codex.SandboxWorkspaceWrite {
				t.Errorf("%s %+v", a.Name, a)
			}
		}
	}
	if cfg.Workspace.Base != "main" || cfg.Workspace.Verify != verifyCommand {
		t.Errorf("workspace settings %+v", cfg.Workspace)
	}
	if strings.Join(names, ",") != "architect,engineer-1,engineer-2" {
		t.Fatalf("agents %v", names)
	}
	for _, task := range script.Tasks {
		if !cfg.MayTalk("architect", task.Engineer) || !cfg.MayTalk(task.Engineer, "architect") {
			t.Errorf("architect and %s may not talk", task.Engineer)
		}
	}
	conf, err := os.ReadFile(filepath.Join(dir, "codex-home", "config.toml"))
	if err != nil || !strings.Contains(string(conf), `base_url = "http://127.0.0.1:9/v1"`) {
		t.Fatalf("config.toml: %s, %v", conf, err)
	}

	// One commit on main, the checkout clean, codex-home/ left out.
	ctx := context.Background()
	g := projectGit(dir)
	git := func(args ...string) string {
		t.Helper()
		out, err := g.Run(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if got := git("rev-list", "--count", "main"); got != "1" {
		t.Errorf("main has %s commits", got)
	}
	if got := git("symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Errorf("checked out: %s", got)
	}
	if got := git("log", "-1", "--format=%an <%ae>"); got != "batty demo <demo@batty.invalid>" {
		t.Errorf("author %s", got)
	}
	if got := strings.Fields(git("ls-tree", "-r", "--name-only", "main")); strings.Join(got, " ") !=
		".gitignore prompts/architect.md prompts/engineer.md team.yaml work/.gitkeep" {
		t.Errorf("first commit holds %q", got)
	}
	if got := git("status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("the checkout is not clean:\n%s", got)
	}

	// batty can make an engineer's worktree from main, and the engineer's
	// working directory is in it.
	l, err := project.LayoutFor(filepath.Join(dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := workspaces.Open(ctx, workspaces.Options{ProjectDir: dir, WorktreesDir: l.WorktreesDir(), LockFile: l.GitLock(),
		MinFreeBytes: 1, Env: g.Env})
	if err != nil {
		t.Fatal(err)
	}
	base, err := repo.ResolveBase(ctx, cfg.Workspace.Base)
	if err != nil || base != "main" {
		t.Fatalf("ResolveBase = %q, %v", base, err)
	}
	if _, err := repo.Ensure(ctx, "engineer-1", base); err != nil {
		t.Fatal(err)
	}
	engineer, _ := cfg.Agent("engineer-1")
	cwd := repo.AgentDir("engineer-1", engineer.Cwd)
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() || cwd != filepath.Join(l.WorktreesDir(), "engineer-1", "work") {
		t.Fatalf("engineer-1 works in %s: %v", cwd, err)
	}
}

// The team's verify really checks the engineers' work: every text file in
// work/ has content, and there is one.
func TestVerifyCommand(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		pass  bool
	}{
		{"no text file", map[string]string{".gitkeep": ""}, false},
		{"an empty one", map[string]string{"greeting.txt": "Hello\n", "numbers.txt": ""}, false},
		{"all with content", map[string]string{".gitkeep": "", "greeting.txt": "Hello\n", "numbers.txt": "1\n"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
				t.Fatal(err)
			}
			for name, text := range c.files {
				if err := os.WriteFile(filepath.Join(dir, "work", name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("sh", "-c", verifyCommand)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.pass {
				t.Fatalf("verify: %v, want passing %v\n%s", err, c.pass, out)
			}
			if !c.pass && !strings.Contains(string(out), "is missing or empty") {
				t.Errorf("a red verify says %q", out)
			}
		})
	}
}

// Without git on PATH the demo says how to get it.
func TestFindGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := FindGit()
	if !errors.Is(err, ErrNoGit) || !strings.Contains(err.Error(), "apt-get install git") || !strings.Contains(err.Error(), "run batty demo again") {
		t.Fatalf("FindGit without git: %v", err)
	}
}

// appendEvent appends one daemon event to the project's event log.
func appendEvent(t *testing.T, l project.Layout, ev eventlog.Event) {
	t.Helper()
	b, _ := json.Marshal(ev)
	f, err := os.OpenFile(l.EventsLog(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

func TestFollowerReportsTheTeam(t *testing.T) {
	dir := t.TempDir()
	l, err := project.LayoutFor(filepath.Join(dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	f, err := newFollower(l, newPrinter(&out), nil)
	if err != nil {
		t.Fatal(err)
	}
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvDelivered, Agent: "engineer-1", Data: eventlog.Delivered{From: "architect"}})
	f.scan()
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvTurnFinished, Agent: "engineer-1", Data: eventlog.TurnFinished{Status: "completed", DurationMS: 1500}})
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvDelivered, Agent: "architect", Data: eventlog.Delivered{From: "engineer-1", InReplyTo: "m1"}})
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvTurnFinished, Agent: "architect", Data: eventlog.TurnFinished{Status: "completed", DurationMS: 500}})
	if _, err := f.human.Deliver(inbox.Message{From: "architect", To: "human", Body: "not yet the answer"}); err != nil {
		t.Fatal(err)
	}
	f.scan()
	select {
	case <-f.answered:
		t.Fatal("answered too early")
	default:
	}
	if _, err := f.human.Deliver(inbox.Message{From: "architect", To: "human", Body: scriptedmodel.AnswerHeading + "\n\nall good"}); err != nil {
		t.Fatal(err)
	}
	f.scan()
	f.scan() // nothing is printed twice
	select {
	case a := <-f.answered:
		if !strings.HasSuffix(a, "all good") {
			t.Fatalf("answer %q", a)
		}
	default:
		t.Fatal("the answer was not recognised")
	}
	select {
	case <-f.settled:
	default:
		t.Fatal("not settled with the answer in and no turn running")
	}
	got := out.String()
	for _, want := range []string{"batty delivers architect's message to engineer-1", "engineer-1 finished its turn (1.5s)",
		"batty delivers engineer-1's reply to architect",
		"architect → human (your inbox):\n", "         all good\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("feed lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "all good") != 1 {
		t.Errorf("a message was printed twice:\n%s", got)
	}

	// A failed turn is reported at once.
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvTurnFinished, Agent: "architect", Detail: "boom",
		Data: eventlog.TurnFinished{Status: "failed", Failure: "exit"}})
	f.scan()
	select {
	case why := <-f.failed:
		if why != "architect's turn failed (exit): boom" {
			t.Fatalf("failure %q", why)
		}
	default:
		t.Fatal("the failed turn was not reported")
	}
}

// The follower wakes on file system events: a message reaching the
// human's inbox is reported without waiting for the rescan.
func TestFollowerRunWakesOnTheInbox(t *testing.T) {
	dir := t.TempDir()
	l, _ := project.LayoutFor(filepath.Join(dir, "team.yaml"))
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := newFollower(l, newPrinter(&bytes.Buffer{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.run(ctx) }()
	if _, err := f.human.Deliver(inbox.Message{From: "architect", To: "human", Body: scriptedmodel.AnswerHeading}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the answer was not noticed")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestPrinterHoldsLinesWhileTheCockpitIsAttached(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out)
	p.hold()
	p.linef("one\ntwo")
	p.plainf("three\n")
	if out.Len() != 0 {
		t.Fatalf("written while held: %q", out.String())
	}
	p.release()
	if got := out.String(); !strings.HasSuffix(got, "s  one\n         two\nthree\n") {
		t.Fatalf("released %q", got)
	}
}

func TestStepLine(t *testing.T) {
	for _, c := range []struct {
		st   scriptedmodel.Step
		want string
	}{
		{scriptedmodel.Step{Agent: "architect", Shell: "batty send engineer-1 'x'"}, "architect (model) runs: batty send engineer-1 'x'"},
		{scriptedmodel.Step{Agent: "engineer-2", Text: "Done.\nReally."}, `engineer-2 (model) ends its turn: "Done. Really."`},
		{scriptedmodel.Step{Text: "?"}, `an agent (model) ends its turn: "?"`},
		{scriptedmodel.Step{Agent: "engineer-1", Failed: true, Text: "The command failed"}, "engineer-1 (model): The command failed"},
	} {
		if got := stepLine(c.st); got != c.want {
			t.Errorf("stepLine(%+v) = %q, want %q", c.st, got, c.want)
		}
	}
	if got := stepLine(scriptedmodel.Step{Agent: "a", Text: strings.Repeat("é", 200)}); got != `a (model) ends its turn: "`+strings.Repeat("é", 99)+`…"` {
		t.Errorf("a long text is not cut: %q", got)
	}
}

// TestPrinterCleansOutsideText: the demo's feed quotes events, messages to
// the human and the model's steps: an escape sequence (OSC 52, OSC 0), a
// CR or a bidirectional control never reaches the terminal; lines are kept,
// indented.
func TestPrinterCleansOutsideText(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out)
	p.linef("architect → human (your inbox):\n%s", "ok\x1b]52;c;Y3VybA==\x07\x1b]0;pwned\x07 over\rwrite \u202eevil\x08")
	got := out.String()
	if want := "s  architect → human (your inbox):\n         ok over\n         write \\u202eevil\\x08\n"; !strings.HasSuffix(got, want) {
		t.Fatalf("printed %q, want it to end with %q", got, want)
	}
}

// An alert that keeps the team from finishing ends the demo at once.
func TestFollowerFailsOnAlerts(t *testing.T) {
	for _, typ := range []string{eventlog.EvAgentParked, eventlog.EvAgentFailed, eventlog.EvAuthRequired,
		eventlog.EvQuotaBlocked, eventlog.EvRejected} {
		t.Run(typ, func(t *testing.T) {
			l, _ := project.LayoutFor(filepath.Join(t.TempDir(), "team.yaml"))
			f, err := newFollower(l, newPrinter(&bytes.Buffer{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			appendEvent(t, l, eventlog.Event{Type: typ, Agent: "engineer-1", Detail: "why"})
			f.scan()
			select {
			case why := <-f.failed:
				if why != typ+" engineer-1: why" {
					t.Fatalf("failure %q", why)
				}
			default:
				t.Fatal("not reported as a failure")
			}
		})
	}
}

// The follower prints the worktrees' commits and the landings, and counts
// each branch it waits for once: the demo is settled only with the answer
// in and both branches landed; a landing with nothing to land does not
// count.
func TestFollowerCountsLandings(t *testing.T) {
	dir := t.TempDir()
	l, err := project.LayoutFor(filepath.Join(dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	f, err := newFollower(l, newPrinter(&out), landingBranches(scriptedmodel.DemoScript()))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.progress(); got != "the architect's answer is not in, 0 of 2 branches landed" {
		t.Fatalf("progress %q", got)
	}
	landed := func(agent, commit string, nothing bool) eventlog.Event {
		data := eventlog.Landed{Request: "r-" + agent, Commit: commit, Base: "main", Branch: "batty/" + agent}
		if nothing {
			data = eventlog.Landed{Request: "r-" + agent, Nothing: true, Base: "main", Branch: "batty/" + agent}
		}
		return eventlog.Event{Type: eventlog.EvLanded, Agent: agent, Detail: "batty/" + agent + " landed on main", Data: data}
	}
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvWorkspaceCreated, Agent: "engineer-1", Detail: filepath.Join(l.WorktreesDir(), "engineer-1"),
		Data: eventlog.WorkspaceCreated{Branch: "batty/engineer-1", Base: "main"}})
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvWorkspaceCommitted, Agent: "engineer-1", Detail: "turn completed",
		Data: eventlog.WorkspaceCommitted{Commit: "abc1234def5678", Branch: "batty/engineer-1"}})
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvLandingQueued, Agent: "engineer-1", Data: eventlog.LandingQueued{Request: "r1", By: "architect", Branch: "batty/engineer-1"}})
	appendEvent(t, l, landed("engineer-1", "def5678abc1234", false))
	appendEvent(t, l, landed("engineer-1", "0123456789abc", false)) // landed again: still one branch
	appendEvent(t, l, landed("engineer-2", "", true))
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvLandingWaiting, Agent: "engineer-2", Detail: "main has uncommitted changes"})
	if _, err := f.human.Deliver(inbox.Message{From: "architect", To: "human", Body: scriptedmodel.AnswerHeading}); err != nil {
		t.Fatal(err)
	}
	f.scan()
	select {
	case <-f.answered:
	default:
		t.Fatal("the answer was not recognised")
	}
	select {
	case <-f.landedAll:
		t.Fatal("every branch counted as landed with one in")
	case <-f.settled:
		t.Fatal("settled with one branch landed")
	default:
	}
	if got := f.progress(); got != "the architect's answer is in, 1 of 2 branches landed" {
		t.Fatalf("progress %q", got)
	}

	appendEvent(t, l, eventlog.Event{Type: eventlog.EvWorkspaceSynced, Agent: "engineer-2", Detail: "main merged into batty/engineer-2"})
	appendEvent(t, l, landed("engineer-2", "fedcba9876543", false))
	f.scan()
	select {
	case <-f.landedAll:
	default:
		t.Fatal("both branches landed, but landedAll is open")
	}
	select {
	case <-f.settled:
	default:
		t.Fatal("not settled with the answer in, both branches landed and no turn running")
	}
	got := out.String()
	for _, want := range []string{
		"batty makes engineer-1's worktree in the state directory (worktrees/engineer-1), on branch batty/engineer-1 from main\n",
		"batty commits engineer-1's turn on batty/engineer-1 (abc1234)\n",
		"batty queues batty/engineer-1 for landing (asked by architect)\n",
		"batty lands batty/engineer-1 on main (def5678): the merge passed verify\n",
		"batty has nothing to land: batty/engineer-2 landed on main\n",
		"the landing of batty/engineer-2 waits: main has uncommitted changes\n",
		"batty keeps engineer-2's worktree up to date: main merged into batty/engineer-2\n",
		"batty lands batty/engineer-2 on main (fedcba9): the merge passed verify\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("feed lacks %q:\n%s", want, got)
		}
	}

	// A landing that failed ends the demo, with verify's output.
	appendEvent(t, l, eventlog.Event{Type: eventlog.EvLandingFailed, Agent: "engineer-1", Detail: "verify exited with status 1",
		Data: eventlog.LandingFailed{Base: "main", Branch: "batty/engineer-1", Output: "work/greeting.txt is missing or empty\n"}})
	f.scan()
	select {
	case why := <-f.failed:
		if why != "batty could not land batty/engineer-1 on main: verify exited with status 1\nwork/greeting.txt is missing or empty" {
			t.Fatalf("failure %q", why)
		}
	default:
		t.Fatal("the failed landing was not reported")
	}
}

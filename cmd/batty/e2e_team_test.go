package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
)

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

// buildBatty builds the real batty binary once per test run: agents run
// `batty send` from inside Codex, so it must be on their PATH under its
// real name.
func buildBatty(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "batty-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtPath = filepath.Join(dir, "batty")
		out, err := exec.Command("go", "build", "-o", builtPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtPath
}

// teamRun drives the real batty binary in a project directory.
type teamRun struct {
	t    *testing.T
	bin  string
	dir  string
	mark string
	env  []string // added to the test's environment
}

// newTeamRun is a teamRun of the built batty in a new project directory,
// its processes marked with tag and a number; the team is stopped when the
// test ends and nothing carrying the mark may be left.
func newTeamRun(t *testing.T, tag string) *teamRun {
	t.Helper()
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("%s-%d", tag, time.Now().UnixNano())}
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	return r
}

// writeTeam writes the project's team.yaml.
func (r *teamRun) writeTeam(team string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "team.yaml"), []byte(team), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *teamRun) batty(args ...string) (string, string, int) {
	r.t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.dir
	cmd.Env = append(append(os.Environ(), "BATTY_TEST_MARK="+r.mark), r.env...)
	return runCmd(r.t, cmd)
}

func (r *teamRun) must(args ...string) string {
	r.t.Helper()
	out, errOut, code := r.batty(args...)
	if code != 0 {
		r.t.Fatalf("batty %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (r *teamRun) status() control.Status {
	r.t.Helper()
	var st control.Status
	if err := json.Unmarshal([]byte(r.must("status", "--json")), &st); err != nil {
		r.t.Fatal(err)
	}
	return st
}

// waitStatus polls `batty status --json` (another process owns the state)
// until ok holds.
func (r *teamRun) waitStatus(what string, ok func(control.Status) bool) control.Status {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st := r.status()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(layoutOf(r.t, r.dir).Dir, "daemon.log"))
			r.t.Fatalf("timed out waiting for %s; status %+v\ndaemon log:\n%s", what, st, log)
		}
		time.Sleep(100 * time.Millisecond) // the daemon is another process
	}
}

func agentStatus(st control.Status, name string) control.AgentStatus {
	for _, a := range st.Agents {
		if a.Name == name {
			return a
		}
	}
	return control.AgentStatus{}
}

func TestE2ETeamWithRealCodex(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-%d", time.Now().UnixNano())}
	r.writeArchitectAndEng("e2e", "ROLE-PROMPT-ARCHITECT", "ROLE-PROMPT-ENG", codexBin, home)

	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	out := r.must("start")
	if !strings.Contains(out, `team "e2e" running`) {
		t.Fatalf("start said %q", out)
	}
	if _, errOut, code := r.batty("start"); code == 0 || !strings.Contains(errOut, "already running") {
		t.Fatalf("second start: exit %d, %q", code, errOut)
	}

	// The architect runs `batty send eng ...` through Codex's shell tool.
	r.must("send", "architect", "plan the work [[mock:shell batty send eng please-build-it]]")
	// The outcome is counted before the shim reports itself idle: wait for
	// both. The engineer's answer comes back to the architect as a reply,
	// which it runs a turn on: two architect turns.
	st := r.waitStatus("both agents to finish their turns and be idle", func(st control.Status) bool {
		a, e := agentStatus(st, "architect"), agentStatus(st, "eng")
		return a.TurnsCompleted == 2 && e.TurnsCompleted == 1 && a.State == "idle" && e.State == "idle"
	})
	for _, name := range []string{"architect", "eng"} {
		a := agentStatus(st, name)
		if a.ThreadID == "" || a.InputTokens == 0 || a.OutputTokens == 0 || a.State != "idle" {
			t.Fatalf("%s status %+v", name, a)
		}
	}
	if st.Daemon.PID == 0 || st.Dispatch.Paused {
		t.Fatalf("status %+v", st)
	}

	// A second message to the architect resumes its thread.
	r.must("send", "architect", "and now? [[mock:reply DONE-TWO]]")
	st = r.waitStatus("the architect's turn on the second message", func(st control.Status) bool {
		return agentStatus(st, "architect").TurnsCompleted == 3
	})
	if got := agentStatus(st, "architect").ThreadID; got == "" {
		t.Fatal("no architect thread")
	}

	// The architect's replies to the human land in the human's inbox.
	inboxOut := r.must("inbox", "--json")
	if !strings.Contains(inboxOut, "SHELL_DONE") || !strings.Contains(inboxOut, "DONE-TWO") {
		t.Fatalf("human inbox lacks the replies:\n%s", inboxOut)
	}

	// The role prompt reaches Codex on every turn of every thread: each
	// model request of a thread carries its agent's standing instructions.
	threads := map[string]string{
		agentStatus(st, "architect").ThreadID: "ROLE-PROMPT-ARCHITECT",
		agentStatus(st, "eng").ThreadID:       "ROLE-PROMPT-ENG",
	}
	reqs := srv.Requests()
	if len(reqs) < 4 {
		t.Fatalf("%d model requests, want at least 4", len(reqs))
	}
	for _, req := range reqs {
		want, ok := threads[req.ThreadID]
		if !ok {
			t.Fatalf("request for unknown thread %q", req.ThreadID)
		}
		if !strings.Contains(string(req.Body), want) {
			t.Errorf("request %d (%s, thread %s) lacks %s", req.Seq, req.Kind, req.ThreadID, want)
		}
	}

	// Stopping with a turn in flight: the CLI says so, interrupts it after
	// the timeout, and returns once nothing is left running.
	r.must("send", "eng", "long job [[mock:slow 60]]")
	r.waitStatus("eng's long turn", func(st control.Status) bool {
		return agentStatus(st, "eng").InFlight != nil
	})
	out, errOut, code := r.batty("stop", "--timeout", "1s")
	if code != 0 || !strings.Contains(out, "stopped") || !strings.Contains(errOut, "1 turn(s) in flight may finish (up to 1s)") {
		t.Fatalf("stop: exit %d, %q, %q", code, out, errOut)
	}
	codextest.AssertNoMarked(t, r.mark)
	if st := r.status(); st.Daemon.PID != 0 || agentStatus(st, "eng").ThreadID == "" {
		t.Fatalf("status after stop %+v", st)
	}
}

// writeArchitectAndEng writes a team name of two agents, architect and eng,
// who may talk to each other, on the real Codex CLI codexBin with
// CODEX_HOME home and a full-access sandbox; their role prompts start with
// archTag and engTag.
func (r *teamRun) writeArchitectAndEng(name, archTag, engTag, codexBin, home string) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Join(r.dir, "prompts"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	for file, text := range map[string]string{
		"prompts/architect.md": archTag + ": you design.\n",
		"prompts/eng.md":       engTag + ": you build.\n",
		"team.yaml": fmt.Sprintf(`name: %s
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
roles:
  - name: architect
    prompt: prompts/architect.md
    talks_to: [eng]
  - name: eng
    prompt: prompts/eng.md
    talks_to: [architect]
`, name, codexBin, home),
	} {
		if err := os.WriteFile(filepath.Join(r.dir, file), []byte(text), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// sandboxedRun is a team run of the real Codex CLI whose sandbox can run
// here (the test skips, saying why, where codex's sandbox cannot), against
// the mock Responses API: the run (its mark named after what), the mock,
// the codex binary and its CODEX_HOME. The daemon and codex's login
// shells get a scratch HOME; env is added to the run's environment. The
// team is stopped and its processes checked gone when the test ends.
func sandboxedRun(t *testing.T, what string, env ...string) (*teamRun, *codextest.Server, string, string) {
	t.Helper()
	codexBin := codextest.Codex(t)
	if out, err := exec.Command(codexBin, "sandbox", "--", "/bin/true").CombinedOutput(); err != nil {
		t.Skipf("codex's sandbox cannot run on this machine (%v): %s", err, out)
	}
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-%s-%d", what, time.Now().UnixNano()),
		env: append([]string{"HOME=" + t.TempDir()}, env...)}
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	return r, srv, codexBin, home
}

// initRepo writes files into dir and makes it a git repository on main
// whose one commit holds them.
func initRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "initial")
}

// sandboxedCodex is the codex section of a team file that runs codexBin
// with CODEX_HOME home in its workspace-write sandbox, /tmp and $TMPDIR
// taken out of its writable roots (the tests' directories are there: only
// what batty grants is writable).
func sandboxedCodex(codexBin, home string) string {
	return fmt.Sprintf(`codex:
  bin: %s
  codex_home: %s
  sandbox: workspace-write
  config:
    sandbox_workspace_write.exclude_slash_tmp: true
    sandbox_workspace_write.exclude_tmpdir_env_var: true
`, codexBin, home)
}

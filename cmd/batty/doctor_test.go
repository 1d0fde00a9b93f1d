package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/doctor"
)

// doctorEnv is the environment of a doctor run: no API key (so a login is
// needed), the test's own state directory.
func doctorEnv(t *testing.T) []string {
	return []string{"OPENAI_API_KEY=", "CODEX_API_KEY=", "OPENAI_BASE_URL=", "BATTY_STATE_HOME=" + t.TempDir(), "HOME=" + t.TempDir()}
}

// doctorJSON runs `batty doctor --json` in dir and decodes it.
func doctorJSON(t *testing.T, dir string, env []string) (doctorReport, int) {
	t.Helper()
	out, errOut, code := runBattyIn(t, dir, env, "", "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: exit %d, %v\nstdout %s\nstderr %s", code, err, out, errOut)
	}
	return rep, code
}

// `batty doctor` names each problem of a team on its own line with its
// fix, and exits 1: a codex that is missing, an account that is logged
// out, a codex whose sandbox cannot run, a host that cannot be reached.
func TestDoctorNamesEachProblemWithItsFix(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	fake := filepath.Join(tmp, "codex")
	// Logged out, and its sandbox refuses to start.
	script := "#!/bin/sh\ncase \"$1\" in\n--version) echo codex-cli " + codex.Version + ";;\n" +
		"login) echo 'Not logged in' >&2; exit 1;;\n" +
		"sandbox) echo 'bwrap: No permissions to creating new namespace' >&2; exit 1;;\nesac\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(tmp, "home-eng")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "nowhere", "codex")
	yaml := fmt.Sprintf(`name: doc
hosts:
  - name: far
    command: [%s, exec, -i, pod, --]
roles:
  - name: eng
    codex:
      bin: %s
      codex_home: %s
  - name: gone
    codex:
      bin: %s
  - name: trainer
    hosts: [far]
    codex:
      sandbox: danger-full-access
`, filepath.Join(tmp, "no-kubectl"), fake, home, missing)
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := doctorEnv(t)
	out, errOut, code := runBattyIn(t, dir, env, "", "doctor")
	if code != 1 {
		t.Fatalf("doctor: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"fail  codex    gone: codex not found at " + missing,
		"fix: install it: npm install -g @openai/codex@" + codex.Version,
		"ok    codex    eng: codex " + codex.Version + " at " + fake + " (native binary), a version batty is tested with",
		"fail  login    eng: codex is not logged in (CODEX_HOME " + home,
		"fix: run: CODEX_HOME=" + home + " codex login",
		"skip  login    gone: not checked: codex does not run",
		"fail  sandbox  the commands of eng: `codex sandbox` could not run a command here",
		"bwrap: No permissions",
		"fix: make `" + fake + " sandbox -- /bin/true` work here",
		"fail  host     far: unreachable",
		"fix: check that the host's command (" + filepath.Join(tmp, "no-kubectl") + " exec -i pod -- true) works from here",
		"skip  codex    trainer on host far: not checked: host far is not ready",
		"batty doctor: 4 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, out)
		}
	}

	rep, code := doctorJSON(t, dir, env)
	if code != 1 || rep.OK || rep.TeamFile != filepath.Join(dir, "team.yaml") {
		t.Fatalf("doctor --json: exit %d, %+v", code, rep)
	}
	failed := map[string]bool{}
	for _, c := range rep.Checks {
		if c.Status == "fail" {
			failed[c.Name+" "+c.Subject] = c.Fix != ""
		}
	}
	for _, k := range []string{"codex gone", "login eng", "sandbox the commands of eng", "host far"} {
		if fixed, ok := failed[k]; !ok || !fixed {
			t.Errorf("--json: no failure %q with a fix: %+v", k, rep.Checks)
		}
	}
}

// With the real Codex CLI, a home that needs no login and a sandbox that
// works, `batty doctor` passes: exit 0, the version named as tested.
func TestDoctorPassesWithTheRealCodex(t *testing.T) {
	bin := codextest.Sandbox(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	dir := t.TempDir()
	yaml := fmt.Sprintf("name: doc\nroles:\n  - name: eng\n    codex:\n      bin: %s\n      codex_home: %s\n", bin, home)
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := doctorEnv(t)
	out, errOut, code := runBattyIn(t, dir, env, "", "doctor")
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"a version batty is tested with", "ok    login    eng: no login needed", "ok    sandbox", "this machine can run the team"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, out)
		}
	}
	if rep, code := doctorJSON(t, dir, env); code != 0 || !rep.OK {
		t.Errorf("doctor --json: exit %d, %+v", code, rep)
	}
}

// While a team with a per-account agent runs, `batty doctor` checks its
// shared app-server: the pid `batty status` names runs and its broker
// answers; a stopped team gets no such line.
func TestDoctorChecksTheRunningSharedAppServer(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := newTeamRun(t, "e2e-doc")
	team := fmt.Sprintf(`name: docshared
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
roles:
  - name: eng
    codex: {runtime: app-server, app_server: per-account}
`, codexBin, home)
	r.writeTeam(team)
	r.must("start", "--no-tmux")
	st := r.waitStatus("eng on a running shared app-server", func(st control.Status) bool {
		s := agentStatus(st, "eng").AppServer
		return s != nil && s.PID > 0
	})
	shared := agentStatus(st, "eng").AppServer
	doctor := func() *doctor.Check {
		out, errOut, _ := r.batty("doctor", "--json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("doctor --json: %v\n%s%s", err, out, errOut)
		}
		for _, c := range rep.Checks {
			if c.Name == "appserver" {
				return &c
			}
		}
		return nil
	}
	c := doctor()
	if c == nil || c.Status != "ok" || !strings.Contains(c.Detail, fmt.Sprintf("process %d runs; its broker answers on %s", shared.PID, shared.Socket)) ||
		!strings.Contains(c.Subject, "shared by eng (key "+shared.Key) {
		t.Fatalf("the appserver check %+v; want ok for pid %d, key %s", c, shared.PID, shared.Key)
	}
	r.must("stop", "--timeout", "5s")
	if c := doctor(); c != nil {
		t.Errorf("a stopped team's doctor checks a shared app-server: %+v", c)
	}
}

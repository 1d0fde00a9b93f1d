package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// hostSecret is in the workers' environment: it must reach codex on the
// host through the handshake, never a command line.
const hostSecret = "sk-fanout-host-secret"

// testBinary is the batty the tests build, as hosts.Self describes a dev
// build.
func testBinary(t *testing.T) hosts.Binary {
	t.Helper()
	return hosts.Binary{Path: hoststest.Batty(t), Version: hoststest.BattyVersion(t), Key: "dev-test",
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
}

// shimConfigWith is a workers' configuration with codex bin and env.
func shimConfigWith(bin string, env ...string) shimconfig.Config {
	return shimconfig.Config{Agent: "fanout", CodexBin: bin, Env: env}
}

// replies returns the "reply" of each row's result.
func (r *rig) replies() []string {
	r.t.Helper()
	var out []string
	for _, rec := range r.output() {
		if rec.Status != "done" {
			r.t.Fatalf("row %d: %s %s", rec.Row+1, rec.Status, rec.Error)
		}
		var res map[string]string
		if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
			r.t.Fatalf("row %d: %v: %q", rec.Row+1, err, rec.Result)
		}
		out = append(out, res["reply"])
	}
	return out
}

// TestFanoutCommandHost runs a job whose workers are on a host reached
// through a command: a wrapper here that records its invocations and runs
// its arguments with the host's own HOME and a variable only the host's
// side has. batty is installed there, its Codex checked, and every row
// runs once, on the host's side, in the project directory there, a long
// reply coming back whole; the secret stays off every command line.
func TestFanoutCommandHost(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("id,sc\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&csv, "%d,env:FANOUT_SIDE\n", i)
	}
	csv.WriteString("6,huge:100000\n")
	r := newRig(t, csv.String(), "row {id} scenario:{sc} replyjson")
	r.opts.Concurrency = 2
	r.shims.Config.Env = append(r.shims.Config.Env, "OPENAI_API_KEY="+hostSecret)

	hostHome, hostDir := t.TempDir(), filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(hostDir, 0o700); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(t.TempDir(), "calls")
	wrapper := filepath.Join(t.TempDir(), "to-pod1")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %s\nexport HOME=%s FANOUT_SIDE=pod1 %s=%s\nexec \"$@\"\n",
		calls, hostHome, codextest.MarkEnv, r.mark)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	pod := team.Host{Name: "pod1", Command: []string{wrapper}, Dir: hostDir}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup := HostSetup{Transport: &hosts.Transport{}, Batty: testBinary(t), Root: r.dir, Cwd: r.dir, Home: "/nonexistent-home", Config: r.shims.Config}
	ready, probs := setup.Prepare(ctx, []team.Host{pod})
	if len(probs) != 0 || len(ready) != 1 {
		t.Fatalf("Prepare: ready %d, problems %+v", len(ready), probs)
	}
	if _, err := os.Stat(filepath.Join(hostHome, ".cache", "batty", "dev-test", "batty")); err != nil {
		t.Fatalf("batty not installed on the host: %v", err)
	}
	r.shims.Hosts = ready
	s := r.run(ctx, nil)
	if !s.Complete() {
		t.Fatalf("summary %+v", s)
	}
	got := r.replies()
	for i, reply := range got[:5] {
		if reply != "pod1" {
			t.Errorf("row %d ran with FANOUT_SIDE=%q, not on the host's side", i+1, reply)
		}
	}
	if len(got[5]) != 100000 {
		t.Errorf("the long reply came back with %d bytes, want 100000", len(got[5]))
	}
	if runs := r.codexRuns(); len(runs) != 6 {
		t.Errorf("codex ran %d times, want once per row:\n%s", len(runs), strings.Join(runs, "\n"))
	}

	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	shims := 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, hostSecret) {
			t.Errorf("the secret is on a command line: %q", l)
		}
		if !strings.Contains(l, " shim ") {
			continue
		}
		shims++
		if !strings.Contains(l, "cd "+hosts.RemotePath(hostDir)+" && exec "+hosts.RemotePath("~/.cache/batty/dev-test/batty")+" shim ") {
			t.Errorf("shim not started in the project directory there with the installed batty: %q", l)
		}
		for _, flag := range []string{"--stdio"} {
			if !strings.Contains(l, flag) {
				t.Errorf("shim started without %s: %q", flag, l)
			}
		}
	}
	if want := int(r.spawns.Load()); shims != want || want == 0 {
		t.Errorf("%d shims started through the host's command, %d workers", shims, want)
	}
}

// TestPrepareHostProblems checks that a host that cannot be reached and
// one without codex are left out with their problems and fixes, while
// this machine and a good host are kept, in order.
func TestPrepareHostProblems(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	good := team.Host{Name: "good", Command: []string{"env", "HOME=" + home}, Dir: "~"}
	down := team.Host{Name: "down", Command: []string{filepath.Join(t.TempDir(), "absent")}}
	setup := HostSetup{Transport: &hosts.Transport{}, Batty: testBinary(t), Root: t.TempDir(), Home: "/nonexistent-home",
		Config: shimConfigWith(self, "BATTY_TEST_ROLE=fakecodex", "OPENAI_API_KEY=sk-x")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ready, probs := setup.Prepare(ctx, []team.Host{good, down, {}})
	if len(ready) != 2 || ready[0].Name() != "good" || ready[0].Host.ThreadsPortable() || ready[1].Name() != "" || !ready[1].Host.ThreadsPortable() {
		t.Fatalf("ready = %+v", ready)
	}
	if ready[0].Config.Cwd != "~" {
		t.Errorf("the good host's config: %+v", ready[0].Config)
	}
	if len(probs) != 1 || probs[0].Host != "down" || probs[0].Problem.Kind != preflight.KindHost || !strings.Contains(probs[0].Problem.Fix, "absent true) works from here") {
		t.Fatalf("problems = %+v", probs)
	}

	setup.Config.CodexBin = "~/no/codex"
	ready, probs = setup.Prepare(ctx, []team.Host{good})
	if len(ready) != 0 || len(probs) != 1 || probs[0].Problem.Kind != preflight.KindMissing || !strings.Contains(probs[0].Problem.Detail, "on host good: codex not found") ||
		!strings.HasPrefix(probs[0].Problem.Fix, "on good: ") {
		t.Fatalf("codex missing on the host: ready %+v, problems %+v", ready, probs)
	}
}

// TestFanoutSSH runs 3 rows on a real sshd's host as its test user:
// batty installed there over ssh, the rows run there (codex sees the
// user's $USER), done, and once the job ends and its shared connection is
// closed nothing of the user is left running.
func TestFanoutSSH(t *testing.T) {
	s := hoststest.StartSSHD(t)
	ctl, err := os.MkdirTemp("/tmp", "bf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ctl) })
	tr := &hosts.Transport{ConfigFile: s.ConfigFile, ControlDir: filepath.Join(ctl, "c")}

	// The fake codex (this test binary) and its files, the user's.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake, state, proj := filepath.Join(s.Home, "bin", "codex"), filepath.Join(s.Home, "state"), filepath.Join(s.Home, "proj")
	for _, d := range []string{filepath.Dir(fake), state, proj} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, s.UID, s.GID); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(fake, s.UID, s.GID); err != nil {
		t.Fatal(err)
	}

	r := newRig(t, rows(3, func(i int) string { return fmt.Sprintf("n%d", i) }), "{name} scenario:env:USER replyjson")
	r.log = filepath.Join(state, "codex.log")
	r.opts.Concurrency = 2
	r.shims.Config.CodexBin = fake
	r.shims.Config.Env = []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + state, "FAKE_CODEX_LOG=" + r.log, "OPENAI_API_KEY=" + hostSecret}
	host := s.Host
	host.Dir = "~/proj"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	setup := HostSetup{Transport: tr, Batty: testBinary(t), Root: r.dir, Cwd: r.dir, Home: "/nonexistent-home", Config: r.shims.Config}
	ready, probs := setup.Prepare(ctx, []team.Host{host})
	if len(probs) != 0 || len(ready) != 1 {
		t.Fatalf("Prepare: ready %d, problems %+v", len(ready), probs)
	}
	r.shims.Hosts = ready
	sum := r.run(ctx, nil)
	if err := setup.Close([]team.Host{host}); err != nil {
		t.Error(err)
	}
	if !sum.Complete() {
		t.Fatalf("summary %+v", sum)
	}
	for i, reply := range r.replies() {
		if reply != s.User {
			t.Errorf("row %d ran as %q, not as the host's user %s", i+1, reply, s.User)
		}
	}
	if runs := r.codexRuns(); len(runs) != 3 {
		t.Errorf("codex ran %d times, want once per row:\n%s", len(runs), strings.Join(runs, "\n"))
	}
	if left := s.WaitNoUserProcesses(t, true, 15*time.Second); left != nil {
		t.Fatalf("left running on the host after the job: %q", left)
	}
}

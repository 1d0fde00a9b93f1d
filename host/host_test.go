package host

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// The conformance suite: what the daemon, `batty fanout` and `batty
// workspace prune` rely on, for every Host. both runs a test against
// this machine and against a host reached through the real sshd of
// hoststest (skipped where that harness cannot run).

// fixture is the project here that a test's host works for: its root
// (a git repository on main) and that repository opened.
type fixture struct {
	root string
	env  []string
	repo *workspaces.Repo
	// batty is the batty binary the tests build (a shim is `batty shim`).
	batty string
}

func gitEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
}

func git(t testing.TB, env []string, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	top := t.TempDir()
	f := &fixture{root: filepath.Join(top, "proj"), env: gitEnv(top), batty: hoststest.Batty(t)}
	if err := os.Mkdir(f.root, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"README": "hello\n", ".gitignore": ".batty/\n"} {
		if err := os.WriteFile(filepath.Join(f.root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, f.env, f.root, "init", "-q", "-b", "main")
	git(t, f.env, f.root, "add", "-A")
	git(t, f.env, f.root, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "-m", "initial")
	r, err := workspaces.Open(context.Background(), workspaces.Options{ProjectDir: f.root,
		WorktreesDir: filepath.Join(f.root, ".batty", "worktrees"), LockFile: filepath.Join(f.root, ".batty", "state", "git.lock"),
		Env: f.env, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.repo = r
	return f
}

// both runs test on this machine and on a host behind the real sshd.
func both(t *testing.T, test func(t *testing.T, f *fixture, h Host)) {
	t.Run("local", func(t *testing.T) {
		f := newFixture(t)
		test(t, f, Local{Checker: &preflight.Checker{Timeout: 20 * time.Second}})
	})
	t.Run("ssh", func(t *testing.T) {
		s := hoststest.StartSSHD(t)
		f := newFixture(t)
		ctl, err := os.MkdirTemp("/tmp", "bh")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(ctl) })
		tr := &hosts.Transport{ConfigFile: s.ConfigFile, ControlDir: filepath.Join(ctl, "c")}
		h := s.Host
		h.Dir = filepath.Join(s.Home, "proj")
		if err := os.Mkdir(h.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(h.Dir, s.UID, s.GID); err != nil {
			t.Fatal(err)
		}
		bin := hosts.Binary{Path: f.batty, Version: hoststest.BattyVersion(t), Key: "dev-test-host", GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
		r := &Remote{Transport: tr, Host: h, Root: f.root, Home: "/nonexistent-home", MinFree: 1, GitTimeout: time.Minute,
			CheckTimeout: 20 * time.Second,
			Batty:        func(ctx context.Context) (string, error) { return hosts.EnsureBatty(ctx, tr, h, bin) }}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hosts.CloseTimeout)
			defer cancel()
			if err := r.Close(ctx); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		test(t, f, r)
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// A host answers its probe.
func TestHostProbe(t *testing.T) {
	both(t, func(t *testing.T, _ *fixture, h Host) {
		if err := h.Probe(ctx(t)); err != nil {
			t.Fatalf("probe: %v", err)
		}
	})
}

// A shim started on a host (its configuration as the host sees it)
// completes the handshake, answers a ping and stops when asked.
func TestHostStartsAShim(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, h Host) {
		c := h.ShimConfig(shimconfig.Config{Agent: "eng-1", CodexBin: "codex", Cwd: f.root})
		cl, err := Start(ctx(t), h, shimclient.SpawnOptions{Path: f.batty, Args: []string{"shim"}, Config: c})
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		if err := cl.Send(protocol.Ping{Nonce: 7}); err != nil {
			t.Fatal(err)
		}
		for m := range cl.Events() {
			if p, ok := m.(protocol.Pong); ok {
				if p.Nonce != 7 {
					t.Fatalf("pong %d, want 7", p.Nonce)
				}
				break
			}
		}
		if err := cl.Send(protocol.Shutdown{}); err != nil {
			t.Fatal(err)
		}
		for range cl.Events() {
		}
		if err := cl.Wait(); err != nil {
			t.Fatalf("the shim ended with %v", err)
		}
	})
}

// A check of a codex that is not installed where the host looks is a
// problem found, not a host that could not be asked.
func TestHostCheckFindsAMissingCodex(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, h Host) {
		rep, err := h.Check(ctx(t), h.Target(team.Agent{Name: "eng-1", Codex: team.CodexSettings{Bin: "/nonexistent/codex"}}, ""))
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		if rep.Problem == nil {
			t.Fatalf("no problem found: %+v", rep)
		}
	})
}

// A job that starts many shims may start them where the precheck holds:
// a host whose Codex cannot run is refused before its first shim, with
// what to fix; this machine's shims fail as themselves. Whatever the host
// says, a working target passes.
func TestHostPrecheck(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, h Host) {
		ok := h.Target(team.Agent{Name: "eng-1", Codex: team.CodexSettings{Bin: "true"}}, "")
		if p := h.Precheck(ctx(t), ok); p != nil && p.Kind == preflight.KindHost {
			t.Fatalf("a reachable host refused: %+v", p)
		}
		bad := h.Target(team.Agent{Name: "eng-1", Codex: team.CodexSettings{Bin: "/nonexistent/codex"}}, "")
		p := h.Precheck(ctx(t), bad)
		if h.Name() != "" && p == nil {
			t.Fatalf("a host whose Codex is missing passed its precheck")
		}
		if p != nil && p.Fix == "" {
			t.Fatalf("a refusal with no fix: %+v", p)
		}
	})
}

// An agent's workspace on a host is made from the base, its state read,
// its commits on the agent's branch here, and pruned: the branch here
// gone, refused first while its work is unlanded.
func TestHostWorkspace(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, h Host) {
		w := h.Workspace(f.repo, "eng-1", "main")
		p, err := w.Prepare(ctx(t), workspaces.PrepareOptions{GitTimeout: time.Minute})
		if err != nil || !p.Made {
			t.Fatalf("prepare: %+v, %v", p, err)
		}
		st, err := w.State(ctx(t))
		if err != nil || !st.Exists || st.Ahead != 0 {
			t.Fatalf("state: %+v, %v", st, err)
		}
		if !strings.Contains(w.Where(), "eng-1") {
			t.Errorf("where %q names no agent", w.Where())
		}
		if !strings.Contains(w.Removal(), workspaces.Branch("eng-1")) {
			t.Errorf("removal %q names no branch", w.Removal())
		}
		res, err := w.Prune(ctx(t), false, time.Unix(1_800_000_000, 0))
		if err != nil || !res.Removed {
			t.Fatalf("prune: %+v, %v", res, err)
		}
		tips, err := f.repo.Tips(ctx(t), workspaces.BranchRef("eng-1"))
		if err != nil || tips[workspaces.BranchRef("eng-1")] != "" {
			t.Fatalf("the branch here after the prune: %v, %v", tips, err)
		}
	})
}

// What a host carries and how it names itself: threads move between
// accounts only where their rollouts are here.
func TestHostCarries(t *testing.T) {
	for _, tc := range []struct {
		h               Host
		name            string
		portable, share bool
	}{
		{Local{}, "", true, true},
		{&Remote{Host: team.Host{Name: "pod1"}}, "pod1", false, false},
	} {
		if tc.h.Name() != tc.name || tc.h.ThreadsPortable() != tc.portable || tc.h.SharesAppServer() != tc.share {
			t.Errorf("%T: name %q portable %v shares %v", tc.h, tc.h.Name(), tc.h.ThreadsPortable(), tc.h.SharesAppServer())
		}
	}
}

// A worktree agent's Codex is checked where its clone will be: on a host
// in the home directory there (the clone is made before its first turn),
// here in its directory.
func TestHostTargetOfAWorktreeAgent(t *testing.T) {
	def := team.Agent{Name: "eng-1", Cwd: "/p/sub", Workspace: team.WorkspaceWorktree, Codex: team.CodexSettings{Bin: "codex"}}
	if got := (Local{}).Target(def, "/h").Cwd; got != "/p/sub" {
		t.Errorf("here: cwd %q", got)
	}
	r := &Remote{Host: team.Host{Name: "pod1", Dir: "~/p"}, Root: "/p"}
	if got := r.Target(def, "").Cwd; got != "" {
		t.Errorf("there: cwd %q, want the home directory", got)
	}
	def.Workspace = team.WorkspaceShared
	if got := r.Target(def, "").Cwd; got == "" {
		t.Errorf("there, shared: no cwd")
	}
}

// For is the zero host for an agent that names none and refuses a host
// the team file does not have.
func TestFor(t *testing.T) {
	cfg := &team.Config{Hosts: []team.Host{{Name: "pod1"}}}
	if h, err := For(cfg, team.Agent{Name: "a"}); err != nil || h.Name != "" {
		t.Errorf("no host: %+v, %v", h, err)
	}
	if h, err := For(cfg, team.Agent{Name: "a", Host: "pod1"}); err != nil || h.Name != "pod1" {
		t.Errorf("pod1: %+v, %v", h, err)
	}
	if _, err := For(cfg, team.Agent{Name: "a", Host: "pod9"}); err == nil || !strings.Contains(err.Error(), "pod9") {
		t.Errorf("unknown host: %v", err)
	}
}

// A shim cannot start on a host where batty is not installed yet.
func TestRemoteSpawnWaitsForTheInstallation(t *testing.T) {
	r := &Remote{Host: team.Host{Name: "pod1"}, Installed: func() string { return "" }}
	if r.Ready() || !(Local{}).Ready() {
		t.Fatalf("ready: there %v, here %v", r.Ready(), Local{}.Ready())
	}
	if _, err := r.Spawn(context.Background(), shimclient.SpawnOptions{}); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("spawn: %v", err)
	}
}

// An agent whose role ran here before and now runs on a host gives up its
// worktree here as its clone there is prepared: what it left uncommitted
// is committed on its branch, which the clone starts from. The host is
// reached through a command here (team.Host.Command).
func TestRemoteWorkspaceReleasesTheWorktreeHere(t *testing.T) {
	f := newFixture(t)
	here := Local{}.Workspace(f.repo, "eng-1", "main")
	if _, err := here.Prepare(ctx(t), workspaces.PrepareOptions{GitTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.repo.Path("eng-1"), "left.txt"), []byte("left\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	r := &Remote{Transport: &hosts.Transport{Env: gitEnv(home)}, Host: team.Host{Name: "box", Command: []string{"env"}, Dir: filepath.Join(home, "proj")},
		Root: f.root, Batty: func(context.Context) (string, error) { return f.batty, nil }, MinFree: 1}
	p, err := r.Workspace(f.repo, "eng-1", "main").Prepare(ctx(t), workspaces.PrepareOptions{GitTimeout: time.Minute})
	if err != nil || !p.Made || p.Released == "" {
		t.Fatalf("prepare there: %+v, %v", p, err)
	}
	if _, err := os.Stat(f.repo.Path("eng-1")); !os.IsNotExist(err) {
		t.Fatalf("the worktree here is still there: %v", err)
	}
	tips, err := f.repo.Tips(ctx(t), workspaces.BranchRef("eng-1"))
	if err != nil || tips[workspaces.BranchRef("eng-1")] != p.Released {
		t.Fatalf("the branch here %v, released %s: %v", tips, p.Released, err)
	}
}

// A shim's configuration, its permission profile's rooms and how the
// profile is finished, as each host sees them: here as they are (what is
// missing here dropped); on a host under its project and home there, the
// transcript streamed, the team file the roster there, the outbox and
// the denials in the state directory there, completed there.
func TestHostViews(t *testing.T) {
	c := shimconfig.Config{Agent: "eng", Cwd: "/work/p/svc", CodexBin: "/home/me/bin/codex", Transcript: "/state/logs/eng.log",
		Env: []string{agentenv.Dir + "=/state", agentenv.TeamFile + "=/work/p/team.yaml"}, Exec: codex.ExecOptions{AddDirs: []string{"/state/outboxes/eng"}}}
	here := Rooms{Outbox: "/state/outboxes/eng", Deny: []string{"/state"}, Env: []string{"A=1"}}
	p := &codex.Permissions{Write: []string{"/work/p/svc"}, Deny: []string{"/nonexistent-denied"}}

	var l Local
	if got := l.ShimConfig(c); !reflect.DeepEqual(got, c) {
		t.Errorf("here: %+v", got)
	}
	if got := l.Rooms("eng", here); !reflect.DeepEqual(got, here) {
		t.Errorf("rooms here: %+v", got)
	}
	lc := c
	l.Permit(&lc, p, []string{team.SocketSSHAgent})
	if lc.Exec.Permissions == nil || len(lc.Exec.Permissions.Deny) != 0 || lc.AllowSockets != nil || len(lc.Exec.AddDirs) != 1 {
		t.Errorf("permitted here: %+v", lc)
	}

	if got := l.WatchDirs(preflight.Target{Bin: "/opt/codex/bin/codex"}, "/h/.codex"); !reflect.DeepEqual(got, []string{"/opt/codex/bin", "/h/.codex", "/h"}) {
		t.Errorf("watched here: %v", got)
	}

	r := &Remote{Host: team.Host{Name: "b", SSH: "b", Dir: "~/src/p"}, Root: "/work/p", Home: "/home/me"}
	if got := r.WatchDirs(preflight.Target{Bin: "/opt/codex/bin/codex"}, "/h/.codex"); got != nil {
		t.Errorf("watched for a host: %v", got)
	}
	there := hosts.StateDir("~/src/p")
	got := r.ShimConfig(c)
	if got.Cwd != "~/src/p/svc" || got.CodexBin != "~/bin/codex" || got.Transcript != "" || !got.TranscriptStream ||
		agentenv.Lookup(got.Env, agentenv.TeamFile) != hosts.RosterThere("~/src/p") || agentenv.Lookup(got.Env, agentenv.Dir) != there {
		t.Errorf("there: %+v", got)
	}
	if c.Env[1] != agentenv.TeamFile+"=/work/p/team.yaml" {
		t.Errorf("ShimConfig changed its argument: %v", c.Env)
	}
	if rm := r.Rooms("eng", here); rm.Outbox != there+"/outboxes/eng" || !reflect.DeepEqual(rm.Deny, hosts.DeniedThere("~/src/p")) || rm.Env != nil || !rm.There {
		t.Errorf("rooms there: %+v", rm)
	}
	r.Permit(&got, p, []string{team.SocketSSHAgent})
	if got.Exec.Permissions != p || got.Exec.AddDirs != nil || !reflect.DeepEqual(got.AllowSockets, []string{team.SocketSSHAgent}) {
		t.Errorf("permitted there: %+v", got)
	}
}

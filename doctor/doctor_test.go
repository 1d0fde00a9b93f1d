package doctor

import (
	"bufio"
	"reflect"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/team"
)

// healthy is a machine where everything works, for one local agent.
func healthy() Facts {
	return Facts{
		Batty: "batty v1.0.0 (protocol 9)",
		Codex: []CodexFacts{{Agents: []string{"eng"}, Target: preflight.Target{Home: "/h/.codex"},
			Report: preflight.Report{Binary: codex.Binary{Path: "/c/codex", Launcher: "/c/codex.js"}, Version: codex.Version, Home: "/h/.codex",
				Login: preflight.LoginDecision{Provider: "openai", Needed: true}, LoggedIn: true}}},
		Sandbox: []SandboxFacts{{Bin: "codex", For: "the commands of eng"}},
		Git:     Tool{Version: "git version 2.45.0"},
		Tmux:    Tool{Version: "tmux 3.4"},
		Disk:    Space{Where: "/p", Free: 10 << 30, Need: 2 << 30},
		Memory:  Space{Free: 8 << 30, Need: 1 << 30},
	}
}

// find returns the check named name (and subject, when not "").
func find(t *testing.T, checks []Check, name, subject string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name && (subject == "" || c.Subject == subject) {
			return c
		}
	}
	t.Fatalf("no %s check (%s) in %+v", name, subject, checks)
	return Check{}
}

// Each problem is its own line, named with its fix; the rest stays ok.
func TestDecide(t *testing.T) {
	type want struct {
		name, subject string
		status        Status
		detail, fix   string // substrings; "" for none
	}
	cases := []struct {
		name   string
		mod    func(*Facts)
		want   []want
		failed bool
	}{
		{"healthy", func(*Facts) {}, []want{
			{"batty", "", OK, "batty v1.0.0", ""},
			{"codex", "eng", OK, "codex " + codex.Version + " at /c/codex (native binary, bypassing the npm launcher /c/codex.js), a version batty is tested with", ""},
			{"login", "eng", OK, "logged in (CODEX_HOME /h/.codex)", ""},
			{"sandbox", "the commands of eng", OK, "`codex sandbox` runs", ""},
			{"git", "", OK, "git version 2.45.0", ""},
			{"tmux", "", OK, "tmux 3.4", ""},
			{"disk", "/p", OK, "10.0 GiB free, the team needs about 2.0 GiB", ""},
			{"memory", "", OK, "8.0 GiB free", ""},
		}, false},
		{"missing codex", func(f *Facts) {
			f.Codex[0].Report = preflight.Report{Problem: &preflight.Problem{Kind: preflight.KindMissing,
				Detail: `codex not found: "codex" is not on PATH`, Fix: "install it: npm install -g @openai/codex@" + codex.Version}}
		}, []want{
			{"codex", "eng", Fail, "is not on PATH", "npm install -g @openai/codex@" + codex.Version},
			{"login", "eng", Skip, "codex does not run", ""},
		}, true},
		{"logged out", func(f *Facts) {
			f.Codex[0].Report.LoggedIn = false
			f.Codex[0].Report.Problem = &preflight.Problem{Kind: preflight.KindLogin,
				Detail: "codex is not logged in (CODEX_HOME /h/.codex, model provider openai)", Fix: "run: CODEX_HOME=/h/.codex codex login"}
		}, []want{
			{"codex", "eng", OK, "codex " + codex.Version, ""},
			{"login", "eng", Fail, "not logged in", "CODEX_HOME=/h/.codex codex login"},
		}, true},
		{"no login needed", func(f *Facts) {
			f.Codex[0].Report.LoggedIn = false
			f.Codex[0].Report.Login = preflight.LoginDecision{Provider: "mock", Why: "provider mock needs no OpenAI login"}
		}, []want{{"login", "eng", OK, "no login needed: provider mock", ""}}, false},
		{"untested codex", func(f *Facts) { f.Codex[0].Report.Version = "0.172.0" }, []want{
			{"codex", "eng", Warn, "codex 0.172.0 is not a version batty was tested with (" + strings.Join(codex.TestedVersions, ", ") + ")",
				"npm install -g @openai/codex@" + codex.Version},
		}, false},
		{"broken sandbox", func(f *Facts) {
			f.Sandbox[0].Err = "`codex sandbox` could not run a command here (exit status 1): bwrap: No permissions"
		}, []want{
			{"sandbox", "the commands of eng", Fail, "bwrap: No permissions", "codex sandbox -- /bin/true"},
		}, true},
		{"sandbox of a codex that does not run", func(f *Facts) { f.Sandbox[0].Skipped = "not checked: codex does not run (see its line)" }, []want{
			{"sandbox", "the commands of eng", Skip, "not checked", ""},
		}, false},
		{"unreachable host", func(f *Facts) {
			f.Hosts = []HostFacts{{Host: team.Host{Name: "gpu1", SSH: "me@gpu1"}, Unreachable: "ssh: connect to host gpu1 port 22: Connection refused"}}
			f.Codex = append(f.Codex, CodexFacts{Agents: []string{"trainer"}, Host: "gpu1", Skipped: "not checked: host gpu1 is not ready (see its line)"})
		}, []want{
			{"host", "gpu1", Fail, "unreachable: ssh: connect to host gpu1", "`ssh me@gpu1 true` works from here"},
			{"codex", "trainer on host gpu1", Skip, "host gpu1 is not ready", ""},
			{"login", "trainer on host gpu1", Skip, "host gpu1 is not ready", ""},
		}, true},
		{"batty cannot run on a host", func(f *Facts) {
			f.Hosts = []HostFacts{{Host: team.Host{Name: "mac", SSH: "mac"}, Install: "host mac runs darwin/arm64, this batty is built for linux/amd64: build batty for darwin/arm64"}}
		}, []want{{"host", "mac", Fail, "batty cannot run there: host mac runs darwin/arm64", "build batty"}}, true},
		{"host ready", func(f *Facts) {
			f.Hosts = []HostFacts{{Host: team.Host{Name: "gpu1", SSH: "gpu1"}, Batty: "~/.cache/batty/v1/batty"}}
			f.Codex = append(f.Codex, CodexFacts{Agents: []string{"trainer"}, Host: "gpu1", Account: "work",
				Report: preflight.Report{Binary: codex.Binary{Path: "/usr/bin/codex"}, Version: codex.Version, Home: "/r/.codex", LoggedIn: true}})
		}, []want{
			{"host", "gpu1", OK, "reachable, batty at ~/.cache/batty/v1/batty", ""},
			{"codex", "trainer on account work on host gpu1", OK, "codex " + codex.Version + " at /usr/bin/codex, a version", ""},
			{"login", "trainer on account work on host gpu1", OK, "logged in (CODEX_HOME /r/.codex)", ""},
		}, false},
		{"git missing, worktrees", func(f *Facts) { f.Git, f.NeedGit = Tool{Err: "not on PATH"}, true }, []want{
			{"git", "", Fail, "worktree agents need it", "install git"},
		}, true},
		{"git missing, no worktrees", func(f *Facts) { f.Git = Tool{Err: "not on PATH"} }, []want{
			{"git", "", Warn, "git not found", "install git"},
		}, false},
		{"tmux missing", func(f *Facts) { f.Tmux = Tool{Err: "not on PATH"} }, []want{
			{"tmux", "", Warn, "no cockpit", "--no-tmux"},
		}, false},
		{"disk short", func(f *Facts) { f.Disk.Free = 512 << 20 }, []want{
			{"disk", "/p", Fail, "512.0 MiB free, the team needs about 2.0 GiB", "free space on the file system of /p"},
		}, true},
		{"memory short", func(f *Facts) { f.Memory.Free = 100 << 20 }, []want{
			{"memory", "", Warn, "100.0 MiB free", "run fewer agents here"},
		}, false},
		{"shared app-server running", func(f *Facts) {
			f.Shared = []SharedFacts{{Key: "3f2a", PID: 41250, CodexHome: "/h/.codex", Socket: "/s/3f2a.sock", Agents: []string{"eng-1", "eng-2"}}}
		}, []want{
			{"appserver", "shared by eng-1, eng-2 (key 3f2a, CODEX_HOME /h/.codex)", OK, "process 41250 runs; its broker answers on /s/3f2a.sock", ""},
		}, false},
		{"shared app-server dead", func(f *Facts) {
			f.Shared = []SharedFacts{{Key: "3f2a", PID: 41250, Agents: []string{"eng-1"}, Dead: "process 41250 is gone", Silent: "cannot connect"}}
		}, []want{
			{"appserver", "", Fail, "process 41250 is gone", "starts a dead shared app-server again"},
		}, true},
		{"shared app-server's broker silent", func(f *Facts) {
			f.Shared = []SharedFacts{{Key: "3f2a", PID: 41250, Agents: []string{"eng-1"}, Silent: "cannot connect to /s/3f2a.sock: connection refused"}}
		}, []want{
			{"appserver", "", Fail, "process 41250 runs, but its broker does not answer: cannot connect", "batty restart"},
		}, true},
		{"memory unknown", func(f *Facts) { f.Memory.Err = "/proc/meminfo has no MemAvailable" }, []want{
			{"memory", "", Warn, "could not read", ""},
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := healthy()
			c.mod(&f)
			checks := Decide(f)
			for _, w := range c.want {
				got := find(t, checks, w.name, w.subject)
				quiet := w.status == OK || w.status == Skip
				if got.Status != w.status || !strings.Contains(got.Detail, w.detail) || !strings.Contains(got.Fix, w.fix) || quiet && got.Fix != "" {
					t.Errorf("%s (%s) = %+v, want %s with %q, fix %q", w.name, w.subject, got, w.status, w.detail, w.fix)
				}
			}
			if Failed(checks) != c.failed {
				t.Errorf("Failed = %v, want %v: %+v", !c.failed, c.failed, checks)
			}
			for _, ch := range checks {
				if ch.Status == Fail && ch.Fix == "" {
					t.Errorf("a failure without a fix: %+v", ch)
				}
			}
		})
	}
}

// The targets of a team: agents sharing a codex together, each account of
// a role on its own, an agent on a host with its paths as the host sees
// them.
func TestTargets(t *testing.T) {
	eng := team.CodexSettings{Bin: "codex", CodexHome: "/home/me/.codex-a"}
	cfg := &team.Config{Dir: "/work/p",
		Hosts:    []team.Host{{Name: "gpu1", SSH: "gpu1", Dir: "~/src/p"}},
		Accounts: []team.Account{{Name: "a", CodexHome: "/home/me/.codex-a"}, {Name: "b", CodexHome: "/home/me/.codex-b"}},
		Roles: []team.Role{
			{Name: "eng", Instances: 2, Cwd: "/work/p", Codex: eng, Accounts: []team.Account{{Name: "a", CodexHome: "/home/me/.codex-a"}, {Name: "b", CodexHome: "/home/me/.codex-b"}}},
			{Name: "trainer", Instances: 1, Cwd: "/work/p/ml", Codex: team.CodexSettings{Bin: "/home/me/bin/codex"}, Hosts: []string{"gpu1"}},
		}}
	got := Targets(cfg, "/home/me")
	var lines []string
	for _, c := range got {
		lines = append(lines, strings.Join(c.Agents, ",")+"|"+c.Account+"|"+c.Host+"|"+c.Target.Bin+"|"+c.Target.Home+"|"+c.Target.Cwd)
	}
	want := []string{
		"eng-1,eng-2|a||codex|/home/me/.codex-a|/work/p",
		"eng-1,eng-2|b||codex|/home/me/.codex-b|/work/p",
		"trainer||gpu1|~/bin/codex||~/src/p/ml",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("targets:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if no := Targets(nil, "/home/me"); len(no) != 1 || no[0].Target.Bin != "" {
		t.Errorf("no team: %+v", no)
	}
}

func TestSandboxUsers(t *testing.T) {
	cfg := &team.Config{Dir: "/p", Codex: team.CodexSettings{Bin: "codex"},
		Workspace: team.WorkspaceSettings{Verify: "make test"},
		Roles: []team.Role{
			{Name: "eng", Instances: 1, Cwd: "/p", Workspace: team.WorkspaceWorktree, Codex: team.CodexSettings{Bin: "codex", Sandbox: "workspace-write"}},
			{Name: "ops", Instances: 1, Cwd: "/p", Codex: team.CodexSettings{Bin: "/opt/codex", Sandbox: "danger-full-access"}},
			{Name: "qa", Instances: 1, Cwd: "/p", Codex: team.CodexSettings{Bin: "/opt/codex", Sandbox: "read-only"}},
		}}
	got := SandboxUsers(cfg)
	if len(got) != 2 || got[0].Bin != "codex" || got[0].For != "the commands of eng, and the team's verify and setup" ||
		got[1].Bin != "/opt/codex" || got[1].For != "the commands of qa" {
		t.Errorf("SandboxUsers = %+v", got)
	}
	cfg.Workspace.Sandbox.Off = true
	cfg.Roles[0].Codex.Sandbox = "danger-full-access"
	if got := SandboxUsers(cfg); len(got) != 1 || got[0].Bin != "/opt/codex" {
		t.Errorf("sandbox off: %+v", got)
	}
}

func TestNeeds(t *testing.T) {
	disk, mem := Needs(4)
	if disk != 1<<30+4*AgentDisk || mem != DaemonMemory+4*AgentMemory {
		t.Errorf("Needs(4) = %d, %d", disk, mem)
	}
	if d0, m0 := Needs(0); d0 != 1<<30+AgentDisk || m0 != DaemonMemory+AgentMemory {
		t.Errorf("Needs(0) = %d, %d", d0, m0)
	}
}

func TestParseMemAvailable(t *testing.T) {
	in := "MemTotal:       16318128 kB\nMemFree:          812344 kB\nMemAvailable:    9120448 kB\n"
	if got, err := parseMemAvailable(bufio.NewScanner(strings.NewReader(in))); err != nil || got != 9120448<<10 {
		t.Errorf("parseMemAvailable = %d, %v", got, err)
	}
	if _, err := parseMemAvailable(bufio.NewScanner(strings.NewReader("MemTotal: 1 kB\n"))); err == nil {
		t.Error("no MemAvailable: no error")
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// The shared app-servers of a status: one per key, with its agents in
// order; agents on a process of their own are on none.
func TestSharedFromStatus(t *testing.T) {
	a := &control.AppServerStatus{PID: 10, Key: "a", CodexHome: "/h/a", Socket: "/s/a.sock"}
	b := &control.AppServerStatus{PID: 0, Key: "b", CodexHome: "/h/b", Socket: "/s/b.sock"}
	got := SharedFromStatus([]control.AgentStatus{{Name: "x", AppServer: a}, {Name: "solo"}, {Name: "y", AppServer: b}, {Name: "z", AppServer: a}})
	want := []SharedFacts{
		{Key: "a", PID: 10, CodexHome: "/h/a", Socket: "/s/a.sock", Agents: []string{"x", "z"}},
		{Key: "b", PID: 0, CodexHome: "/h/b", Socket: "/s/b.sock", Agents: []string{"y"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SharedFromStatus = %+v, want %+v", got, want)
	}
	if got := SharedFromStatus([]control.AgentStatus{{Name: "solo"}}); got != nil {
		t.Errorf("no shared agent: %+v", got)
	}
}

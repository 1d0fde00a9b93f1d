package team

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// newTeamDir creates a directory holding prompts/{a,b,c}.md and a work/
// subdirectory, and returns its path.
func newTeamDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, "prompts", n+".md"), []byte("do "+n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadString writes src as dir/team.yaml in a fresh team directory and
// loads it. Error messages are returned with the directory stripped, so
// they start with "team.yaml:".
func loadString(t *testing.T, src string) (*Config, string, string) {
	t.Helper()
	dir := newTeamDir(t)
	path := filepath.Join(dir, "team.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err == nil {
		return cfg, "", dir
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Load: error %v is not a *ValidationError", err)
	}
	return cfg, strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), dir
}

// mergeBomb builds a document whose merge keys would expand to 10^11
// mappings if followed naively.
func mergeBomb() string {
	var b strings.Builder
	b.WriteString("name: t\ncodex:\n  model: x\n  env: &m0 {A: b}\n  config:\n")
	for i := 1; i <= 11; i++ {
		refs := strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10)
		fmt.Fprintf(&b, "    k%d: &m%d {<<: [%s]}\n", i, i, strings.TrimSuffix(refs, ", "))
	}
	b.WriteString("roles: [{name: a, codex: {env: {<<: *m11}}}]\n")
	return b.String()
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // one full line of the error
	}{
		{"unknown top-level key", "name: t\nrole: []\nroles: [{name: a}]\n",
			`team.yaml:2:1: unknown key "role" in team file (did you mean "roles"?)`},
		{"unknown key without suggestion", "name: t\nroles: [{name: a}]\nzzz: 1\n",
			`team.yaml:3:1: unknown key "zzz" in team file (valid keys: name, codex, timeouts, backlog_limit, max_attempts, on_alert, alert_on_reply, quota, workspace, accounts, hosts, limits, roles, schedules, pricing, budgets, console, telemetry)`},
		{"unknown quota scope", "name: t\nquota: {scope: accounts}\nroles: [{name: a}]\n",
			`team.yaml:2:16: invalid quota.scope "accounts" (did you mean "account"?)`},
		{"quota cooldown above its cap", "name: t\nquota: {cooldown: 3h}\nroles: [{name: a}]\n",
			`team.yaml:2:8: quota.cooldown_max (2h0m0s) is less than quota.cooldown (3h0m0s) (raise quota.cooldown_max or lower quota.cooldown)`},
		{"quota backoff cap below a minute", "name: t\nquota: {backoff_max: 30s}\nroles: [{name: a}]\n",
			`team.yaml:2:8: quota.backoff_max (30s) is less than the first back-off step (1m) (set quota.backoff_max to 1m or more)`},
		{"unknown role key", "name: t\nroles:\n  - name: a\n    talksTo: [a]\n",
			`team.yaml:4:5: unknown key "talksTo" in role (did you mean "talks_to"?)`},
		{"unknown codex key", "name: t\ncodex:\n  modle: o3\nroles: [{name: a}]\n",
			`team.yaml:3:3: unknown key "modle" in codex (did you mean "model"?)`},
		{"duplicate key", "name: t\nname: u\nroles: [{name: a}]\n",
			`team.yaml:2:1: duplicate key "name" in team file (first defined at line 1)`},
		{"wrong type string", "name: t\ncodex: {model: 5}\nroles: [{name: a}]\n",
			`team.yaml:2:16: codex.model must be a string, not an integer (quote it: "5")`},
		{"wrong type int", "name: t\nmax_attempts: \"8\"\nroles: [{name: a}]\n",
			`team.yaml:2:15: max_attempts must be an integer, not a string (remove the quotes)`},
		{"wrong type list", "name: t\nroles:\n  - name: a\n    talks_to: a\n",
			`team.yaml:4:15: talks_to must be a list, not a string (write a list: [a])`},
		{"wrong type mapping", "name: t\ntimeouts: 5m\nroles: [{name: a}]\n",
			`team.yaml:2:11: timeouts must be a mapping, not a string`},
		{"roles not a list", "name: t\nroles: a\n",
			`team.yaml:2:8: roles must be a list, not a string (write a list of roles, each starting with "- name:")`},
		{"bad duration", "name: t\ntimeouts:\n  idle: 10 minutes\nroles: [{name: a}]\n",
			`team.yaml:3:9: timeouts.idle: invalid duration "10 minutes" (use Go duration syntax, e.g. 90s, 10m or 1h30m)`},
		{"duration without unit", "name: t\ntimeouts: {turn: 60}\nroles: [{name: a}]\n",
			`team.yaml:2:18: timeouts.turn must be a duration with a unit, not a bare number (add a unit, e.g. 60s or 60m)`},
		{"negative duration", "name: t\ntimeouts: {shutdown: -1s}\nroles: [{name: a}]\n",
			`team.yaml:2:22: timeouts.shutdown must be positive, got -1s`},
		{"duplicate role", "name: t\nroles:\n  - name: a\n  - name: b\n  - name: a\n",
			`team.yaml:5:11: duplicate role name "a" (first defined at line 3)`},
		{"duplicate agent name", "name: t\nroles:\n  - name: eng\n    instances: 2\n  - name: eng-1\n",
			`team.yaml:5:11: duplicate agent name "eng-1" (also an agent of role "eng" on line 3; rename one of the roles)`},
		{"duplicate agent name reversed", "name: t\nroles:\n  - name: eng-2\n  - name: eng\n    instances: 2\n",
			`team.yaml:4:11: duplicate agent name "eng-2" (also an agent of role "eng-2" on line 3; rename one of the roles)`},
		{"role name equals agent name", "name: t\nroles:\n  - name: x\n    instances: 2\n  - name: x-1\n    instances: 2\n",
			"team.yaml:5:11: name \"x-1\" is used both as a role name and as an agent name (role \"x\" on line 3; `batty send x-1` would be ambiguous, rename one of the roles)"},
		{"talks_to unknown role", "name: t\nroles:\n  - name: manager\n  - name: eng\n    talks_to: [human, mangr]\n",
			`team.yaml:5:23: talks_to names unknown role "mangr" (did you mean "manager"?)`},
		{"talks_to unknown role no suggestion", "name: t\nroles:\n  - name: manager\n    talks_to: [zz]\n",
			`team.yaml:4:16: talks_to names unknown role "zz" (roles: manager)`},
		{"uppercase name", "name: t\nroles: [{name: Eng}]\n",
			`team.yaml:2:16: invalid role name "Eng" (use lowercase letters, digits and "-", starting with a letter or digit, at most 40 characters; try "eng")`},
		{"path escape name", "name: t\nroles: [{name: ../x}]\n",
			`team.yaml:2:16: invalid role name "../x"`},
		{"slash name", "name: a/b\nroles: [{name: x}]\n",
			`team.yaml:1:7: invalid team name "a/b"`},
		{"space name", "name: t\nroles: [{name: \"a b\"}]\n",
			`team.yaml:2:16: invalid role name "a b"`},
		{"leading hyphen", "name: -t\nroles: [{name: x}]\n",
			`team.yaml:1:7: invalid team name "-t"`},
		{"long name", "name: " + strings.Repeat("a", 41) + "\nroles: [{name: x}]\n",
			`team.yaml:1:7: team name is too long (41 characters, at most 40)`},
		{"long agent name", "name: t\nroles:\n  - name: " + strings.Repeat("a", 38) + "\n    instances: 10\n",
			`team.yaml:3:11: agent name "` + strings.Repeat("a", 38) + `-10" would be 41 characters long; the limit is 40 (shorten the role name to at most 37 characters)`},
		{"reserved human", "name: t\nroles:\n  - name: human\n",
			`team.yaml:3:11: role name "human" is reserved ("human" always means the person running batty; pick another name)`},
		{"reserved state name", "name: t\nroles:\n  - name: quota\n",
			`team.yaml:3:11: role name "quota" is reserved (batty keeps its own state in .batty/state/quota.json, next to each agent's; pick another name)`},
		{"instances zero", "name: t\nroles:\n  - name: a\n    instances: 0\n",
			`team.yaml:4:16: instances must be between 1 and 100, got 0`},
		{"too many agents", "name: t\nroles:\n  - name: a\n    instances: 100\n  - name: b\n    instances: 100\n  - name: c\n    instances: 57\n  - name: d\n",
			`team.yaml:7:5: team has 258 agents, more than the limit of 256 (reached at this role) (lower instances or remove roles; a team may have at most 256 agents)`},
		{"instances too many", "name: t\nroles:\n  - name: a\n    instances: 101\n",
			`team.yaml:4:16: instances must be between 1 and 100, got 101`},
		{"removed queue_depth", "name: t\nqueue_depth: 16\nroles: [{name: a}]\n",
			`team.yaml:2:1: queue_depth is no longer a key of the team file (delete the line: the daemon hands an agent one message at a time and the rest wait in its inbox, bounded by backlog_limit)`},
		{"max attempts", "name: t\nmax_attempts: 0\nroles: [{name: a}]\n",
			`team.yaml:2:15: max_attempts must be between 1 and 100, got 0`},
		{"backlog limit", "name: t\nbacklog_limit: 0\nroles: [{name: a}]\n",
			`team.yaml:2:16: backlog_limit must be between 1 and 100000, got 0`},
		{"sandbox enum", "name: t\ncodex:\n  sandbox: workspace_write\nroles: [{name: a}]\n",
			`team.yaml:3:12: invalid codex.sandbox "workspace_write" (did you mean "workspace-write"?)`},
		{"runtime enum", "name: t\ncodex:\n  runtime: appserver\nroles: [{name: a}]\n",
			`team.yaml:3:12: invalid codex.runtime "appserver" (did you mean "app-server"?)`},
		{"runtime unknown", "name: t\nroles:\n  - name: a\n    codex: {runtime: warm}\n",
			`team.yaml:4:22: invalid codex.runtime "warm" (one of: exec, app-server)`},
		{"runtime empty", "name: t\ncodex: {runtime: \"\"}\nroles: [{name: a}]\n",
			`team.yaml:2:18: invalid codex.runtime "" (one of: exec, app-server)`},
		{"app_server unknown", "name: t\ncodex: {runtime: app-server, app_server: shared}\nroles: [{name: a}]\n",
			`team.yaml:2:42: invalid codex.app_server "shared" (one of: per-agent, per-account)`},
		{"runtime_idle bare number", "name: t\ncodex: {runtime_idle: 10}\nroles: [{name: a}]\n",
			`team.yaml:2:23: codex.runtime_idle must be a duration with a unit, not a bare number`},
		{"runtime_idle negative", "name: t\nroles:\n  - name: a\n    codex: {runtime_idle: -1m}\n",
			`team.yaml:4:27: codex.runtime_idle must not be negative, got -1m`},
		{"runtime_idle syntax", "name: t\ncodex:\n  runtime_idle: ten minutes\nroles: [{name: a}]\n",
			`team.yaml:3:17: codex.runtime_idle: invalid duration "ten minutes"`},
		{"runtime_idle list", "name: t\ncodex: {runtime_idle: [1m]}\nroles: [{name: a}]\n",
			`team.yaml:2:23: codex.runtime_idle must be`},
		{"approval enum", "name: t\nroles:\n  - name: a\n    codex: {approval_policy: always}\n",
			`team.yaml:4:30: invalid codex.approval_policy "always" (one of: untrusted, on-failure, on-request, never)`},
		{"effort enum", "name: t\ncodex: {reasoning_effort: extreme}\nroles: [{name: a}]\n",
			`team.yaml:2:27: invalid codex.reasoning_effort "extreme" (one of: minimal, low, medium, high, xhigh, or "")`},
		{"missing prompt", "name: t\nroles:\n  - name: a\n    prompt: prompts/nope.md\n",
			`team.yaml:4:13: prompt file "prompts/nope.md" does not exist (relative paths are resolved against`},
		{"prompt is a directory", "name: t\nroles:\n  - name: a\n    prompt: prompts\n",
			`team.yaml:4:13: prompt file "prompts" is a directory, not a file`},
		{"missing cwd", "name: t\nroles:\n  - name: a\n    cwd: nowhere\n",
			`team.yaml:4:10: cwd "nowhere" does not exist`},
		{"cwd is a file", "name: t\nroles:\n  - name: a\n    cwd: prompts/a.md\n",
			`team.yaml:4:10: cwd "prompts/a.md" is not a directory`},
		{"no roles key", "name: t\n",
			`team.yaml:1:1: no roles defined (add a "roles:" list with at least one role)`},
		{"empty roles", "name: t\nroles: []\n",
			`team.yaml:2:1: no roles defined (add at least one role, e.g. "- name: engineer")`},
		{"missing name", "roles: [{name: a}]\n",
			`team.yaml:1:1: missing required key "name" (add e.g. "name: my-team")`},
		{"role without name", "name: t\nroles:\n  - instances: 2\n",
			`team.yaml:3:5: role is missing required key "name" (add e.g. "name: engineer")`},
		{"role not a mapping", "name: t\nroles:\n  - a\n",
			`team.yaml:3:5: role must be a mapping, not a string (each role is a mapping starting with "- name:")`},
		{"config value type", "name: t\ncodex:\n  config: {a: [1]}\nroles: [{name: a}]\n",
			`team.yaml:3:15: codex.config.a must be a string, number or boolean, not a list`},
		{"config key", "name: t\ncodex:\n  config: {\"a b\": 1}\nroles: [{name: a}]\n",
			`team.yaml:3:12: invalid codex.config key "a b"`},
		{"env value type", "name: t\ncodex:\n  env: {PORT: 8080}\nroles: [{name: a}]\n",
			`team.yaml:3:15: codex.env.PORT must be a string, not an integer (quote it: "8080")`},
		{"env null", "name: t\ncodex:\n  env: {X: ~}\nroles: [{name: a}]\n",
			`team.yaml:3:12: codex.env.X must be a string, not null (use "" for an empty value)`},
		{"empty bin", "name: t\ncodex: {bin: \"\"}\nroles: [{name: a}]\n",
			`team.yaml:2:14: codex.bin must not be empty`},
		{"model line break", "name: t\ncodex: {model: \"a\\nb\"}\nroles: [{name: a}]\n",
			`team.yaml:2:16: codex.model must not contain line breaks`},
		{"context window", "name: t\ncodex: {context_window: 0}\nroles: [{name: a}]\n",
			`team.yaml:2:25: codex.context_window must be between 1 and 2147483647, got 0`},
		{"args element", "name: t\ncodex: {args: [--x, ~]}\nroles: [{name: a}]\n",
			`team.yaml:2:21: codex.args must not contain null elements`},
		{"syntax error", "name: t\nroles:\n  - name: a\n   bad: [\n",
			`team.yaml:4:4: invalid YAML: did not find expected '-' indicator (check the indentation of line 4: it starts at column 4, the key above it (line 3) at column 5)`},
		{"tabs", "name: t\nroles:\n\t- name: a\n",
			`team.yaml:3:1: invalid YAML: found character that cannot start any token (line 3 is indented with a tab; indent with spaces, YAML does not allow tabs)`},
		{"flow syntax error", "name: t\nroles:\n  - name: a\n    talks_to: [b\n  - name: b\n",
			`team.yaml:3: invalid YAML: did not find expected ',' or ']'`},
		{"unknown anchor", "name: t\nroles: [{name: a, codex: *x}]\n",
			`team.yaml:2:26: invalid YAML: unknown anchor 'x' referenced (define the anchor with &x before using it)`},
		{"empty file", "",
			`team.yaml: file is empty (run ` + "`batty init`" + ` for an example)`},
		{"comments only", "# nothing\n",
			`team.yaml: file is empty`},
		{"not a mapping", "- a\n- b\n",
			`team.yaml:1:1: team file must be a mapping of keys, not a list`},
		{"two documents", "name: t\nroles: [{name: a}]\n---\nname: u\n",
			`team.yaml:3:1: file contains more than one YAML document`},
		{"merge bomb", mergeBomb(), `team.yaml:9:14: document is too large or uses too many aliases (simplify the file)`},
		{"too deep", strings.Repeat("[", 20000), `team.yaml: invalid YAML: exceeded max depth of 10000`},
		{"merge cycle", "name: t\ncodex: &c {<<: *c}\nroles: [{name: a}]\n",
			`team.yaml:2:16: merge keys (<<) nested too deeply`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, msg, _ := loadString(t, tt.src)
			if cfg != nil || msg == "" {
				t.Fatalf("Load succeeded, want error containing %q", tt.want)
			}
			found := false
			for _, line := range strings.Split(msg, "\n") {
				if strings.HasPrefix(line, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("error:\n%s\nwant a line starting with:\n%s", msg, tt.want)
			}
		})
	}
}

func TestParseCollectsAllProblems(t *testing.T) {
	src := `name: Bad
codex:
  sandbox: nope
timeouts:
  turn: soon
roles:
  - name: manager
    talks_to: [engineer, ghost]
  - name: manager
  - name: engineer
    instances: 0
    prompt: missing.md
`
	_, msg, _ := loadString(t, src)
	want := []string{
		`team.yaml:1:7: invalid team name "Bad"`,
		`team.yaml:3:12: invalid codex.sandbox "nope"`,
		`team.yaml:5:9: timeouts.turn: invalid duration "soon"`,
		`team.yaml:8:26: talks_to names unknown role "ghost"`,
		`team.yaml:9:11: duplicate role name "manager" (first defined at line 7)`,
		`team.yaml:11:16: instances must be between 1 and 100, got 0`,
		`team.yaml:12:13: prompt file "missing.md" does not exist`,
	}
	lines := strings.Split(msg, "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(want), msg)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, msg, dir := loadString(t, "name: t\nroles:\n  - name: a\n")
	if msg != "" {
		t.Fatal(msg)
	}
	want := &Config{
		Name:         "t",
		Codex:        CodexSettings{Bin: "codex", Sandbox: "workspace-write", ApprovalPolicy: "never", Runtime: "exec", RuntimeIdle: 10 * time.Minute, AppServer: AppServerPerAgent},
		Timeouts:     Timeouts{Turn: 60 * time.Minute, Idle: 10 * time.Minute, NetworkWait: 30 * time.Minute, Shutdown: 30 * time.Second, Alert: 10 * time.Second},
		BacklogLimit: 256,
		MaxAttempts:  3,
		Quota:        Quota{Scope: "account", BackoffMax: 30 * time.Minute, Cooldown: 15 * time.Minute, CooldownMax: 2 * time.Hour, WarnPct: 90},
		Workspace:    WorkspaceSettings{VerifyTimeout: 30 * time.Minute, SetupTimeout: 10 * time.Minute, Sandbox: WorkspaceSandbox{SetupNetwork: true}},
		Console:      Console{Listen: DefaultConsoleListen},
		Path:         filepath.Join(dir, "team.yaml"),
		Dir:          dir,
		file:         filepath.Join(dir, "team.yaml"),
	}
	want.Roles = []Role{{Name: "a", Instances: 1, Cwd: dir, Workspace: "shared", Codex: want.Codex, Line: 3}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
	// Null values and empty sections mean "use the default".
	cfg2, msg, _ := loadString(t, "name: t\ncodex:\ntimeouts: {turn: ~}\nmax_attempts:\nroles:\n  - name: a\n    instances:\n    codex: {}\n")
	if msg != "" {
		t.Fatal(msg)
	}
	if cfg2.Codex.Sandbox != "workspace-write" || cfg2.Codex.Runtime != RuntimeExec || cfg2.Roles[0].Codex.Runtime != RuntimeExec || cfg2.Timeouts.Turn != time.Hour || cfg2.MaxAttempts != 3 || cfg2.Roles[0].Instances != 1 {
		t.Errorf("null values did not keep defaults: %+v", cfg2)
	}
}

func TestParseOverrides(t *testing.T) {
	src := `name: t
codex:
  bin: ./bin/codex
  model: gpt-5
  reasoning_effort: low
  sandbox: read-only
  approval_policy: on-request
  runtime: app-server
  runtime_idle: 2m
  app_server: per-account
  args: [--search]
  config: {model_verbosity: low, "features.web_search": true, n: 3, f: 1.0, big: 1e300, s: "a \"q\"\n"}
  env: {A: "1", B: two}
  codex_home: home
  context_window: 1000
timeouts: {turn: 2h, idle: 90s, network_wait: 5m, shutdown: 1m}
quota: {scope: agent, backoff_max: 10m, cooldown: 5m, cooldown_max: 1h}
backlog_limit: 7
max_attempts: 5
roles:
  - name: a
    instances: 3
    prompt: prompts/a.md
    cwd: work
    talks_to: [b, a, b, human]
    codex:
      model: ""
      args: []
      config: {n: 4, extra: "x"}
      env: {B: three}
      codex_home: /abs/home
  - name: b
    prompt: ` + "%s" + `
    codex:
      bin: codex-nightly
      context_window: 5
      runtime: exec
      runtime_idle: 0
`
	dir := newTeamDir(t)
	abs := filepath.Join(dir, "prompts", "b.md")
	path := filepath.Join(dir, "team.yaml")
	cfg, err := Parse(path, []byte(strings.Replace(src, "%s", abs, 1)))
	if err != nil {
		t.Fatal(err)
	}
	base := CodexSettings{
		Bin: filepath.Join(dir, "bin", "codex"), Model: "gpt-5", ReasoningEffort: "low",
		Sandbox: "read-only", ApprovalPolicy: "on-request", Runtime: "app-server", RuntimeIdle: 2 * time.Minute, AppServer: AppServerPerAccount, Args: []string{"--search"},
		Config: map[string]string{
			"model_verbosity": `"low"`, "features.web_search": "true", "n": "3", "f": "1.0", "big": "1e+300", "s": `"a \"q\"\n"`,
		},
		Env:       map[string]string{"A": "1", "B": "two"},
		CodexHome: filepath.Join(dir, "home"), ContextWindow: 1000,
	}
	if !reflect.DeepEqual(cfg.Codex, base) {
		t.Errorf("team codex:\n got %+v\nwant %+v", cfg.Codex, base)
	}
	if cfg.Timeouts != (Timeouts{Turn: 2 * time.Hour, Idle: 90 * time.Second, NetworkWait: 5 * time.Minute, Shutdown: time.Minute, Alert: 10 * time.Second}) ||
		cfg.BacklogLimit != 7 || cfg.MaxAttempts != 5 {
		t.Errorf("timeouts/backlog/attempts: %+v %d %d", cfg.Timeouts, cfg.BacklogLimit, cfg.MaxAttempts)
	}
	if want := (Quota{Scope: "agent", BackoffMax: 10 * time.Minute, Cooldown: 5 * time.Minute, CooldownMax: time.Hour, WarnPct: 90}); cfg.Quota != want {
		t.Errorf("quota %+v, want %+v", cfg.Quota, want)
	}
	a := cfg.Roles[0]
	wantA := base.clone()
	wantA.Model = ""
	wantA.Args = []string{}
	wantA.Config["n"] = "4"
	wantA.Config["extra"] = `"x"`
	wantA.Env["B"] = "three"
	wantA.CodexHome = "/abs/home"
	if !reflect.DeepEqual(a.Codex, wantA) {
		t.Errorf("role a codex:\n got %+v\nwant %+v", a.Codex, wantA)
	}
	if a.Instances != 3 || a.Prompt != filepath.Join(dir, "prompts", "a.md") || a.Cwd != filepath.Join(dir, "work") {
		t.Errorf("role a: %+v", a)
	}
	if !reflect.DeepEqual(a.TalksTo, []string{"b", "a"}) {
		t.Errorf("role a talks_to = %q, want [b a]", a.TalksTo)
	}
	b := cfg.Roles[1]
	wantB := base.clone()
	wantB.Bin = "codex-nightly"
	wantB.ContextWindow = 5
	wantB.Runtime = "exec"
	wantB.RuntimeIdle = 0
	if !reflect.DeepEqual(b.Codex, wantB) || b.Prompt != abs || b.TalksTo != nil {
		t.Errorf("role b: %+v", b)
	}
	// Overrides must not leak into the team defaults.
	if !reflect.DeepEqual(cfg.Codex, base) {
		t.Errorf("team codex modified by role overrides: %+v", cfg.Codex)
	}
}

func TestParseAliasesAndMerge(t *testing.T) {
	src := `name: t
codex: &fast
  model: fast-model
  env: {A: "1"}
roles:
  - name: a
    codex: *fast
  - name: b
    codex:
      <<: *fast
      model: other
  - &c
    name: c
`
	cfg, msg, _ := loadString(t, src)
	if msg != "" {
		t.Fatal(msg)
	}
	if got := cfg.Roles[0].Codex.Model; got != "fast-model" {
		t.Errorf("alias: model = %q", got)
	}
	if got := cfg.Roles[1].Codex; got.Model != "other" || got.Env["A"] != "1" {
		t.Errorf("merge: %+v", got)
	}
	if cfg.Roles[2].Name != "c" {
		t.Errorf("anchored role: %+v", cfg.Roles[2])
	}
}

func TestParseEmptyPath(t *testing.T) {
	_, err := Parse("", []byte("name: [\n"))
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].File != "team.yaml" {
		t.Fatalf("Parse(\"\") error = %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load(missing) = %v, want ErrNotExist", err)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "team.yaml", Line: 12, Column: 5, Message: "m", Hint: "h"}, "team.yaml:12:5: m (h)"},
		{Problem{File: "team.yaml", Line: 3, Message: "m"}, "team.yaml:3: m"},
		{Problem{File: "team.yaml", Message: "m"}, "team.yaml: m"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	e := &ValidationError{Problems: []Problem{tests[0].p, tests[1].p}}
	if got, want := e.Error(), "team.yaml:12:5: m (h)\nteam.yaml:3: m"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestConfigTOMLRendering(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{`low`, `"low"`},
		{`"low"`, `"low"`},
		{`"5"`, `"5"`},
		{`'a\b'`, `"a\\b"`},
		{`"tab\there\u0001"`, `"tab\there\u0001"`},
		{`true`, `true`},
		{`False`, `false`},
		{`3`, `3`},
		{`-7`, `-7`},
		{`0x10`, `16`},
		{`1_000`, `1000`},
		{`1.5`, `1.5`},
		{`2.0`, `2.0`},
		{`1e3`, `1000.0`},
		{`.inf`, `inf`},
		{`-.inf`, `-inf`},
		{`.nan`, `nan`},
		{`"ünïcode"`, `"ünïcode"`},
	}
	for _, tt := range tests {
		cfg, msg, _ := loadString(t, "name: t\ncodex:\n  config:\n    k: "+tt.yaml+"\nroles: [{name: a}]\n")
		if msg != "" {
			t.Errorf("%s: %s", tt.yaml, msg)
			continue
		}
		if got := cfg.Codex.Config["k"]; got != tt.want {
			t.Errorf("config value %s rendered as %s, want %s", tt.yaml, got, tt.want)
		}
	}
}

// TestAgentCap: a team of 2,000 roles × 100 instances is refused with the
// limit named; exactly MaxAgents agents are fine.
func TestAgentCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\nroles:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "  - name: r%d\n    instances: 100\n", i)
	}
	_, msg, _ := loadString(t, b.String())
	if !strings.Contains(msg, "team.yaml:7:5: team has 200000 agents, more than the limit of 256") {
		t.Fatalf("error = %.300s", msg)
	}

	b.Reset()
	b.WriteString("name: t\nroles:\n  - name: a\n    instances: 100\n  - name: b\n    instances: 100\n  - name: c\n    instances: 55\n  - name: d\n")
	cfg, msg, _ := loadString(t, b.String())
	if cfg == nil || len(cfg.Agents()) != MaxAgents {
		t.Fatalf("a team of %d agents: %s", MaxAgents, msg)
	}
}

// runtime_idle takes a Go duration or 0 (never), team-wide or per role;
// absent, it is DefaultRuntimeIdle.
func TestParseRuntimeIdle(t *testing.T) {
	for _, c := range []struct {
		name, src   string
		team, roleA time.Duration
	}{
		{"absent", "name: t\nroles: [{name: a}]\n", DefaultRuntimeIdle, DefaultRuntimeIdle},
		{"team", "name: t\ncodex: {runtime_idle: 90s}\nroles: [{name: a}]\n", 90 * time.Second, 90 * time.Second},
		{"zero int", "name: t\ncodex: {runtime_idle: 0}\nroles: [{name: a}]\n", 0, 0},
		{"zero string", "name: t\ncodex: {runtime_idle: \"0\"}\nroles: [{name: a}]\n", 0, 0},
		{"zero unit", "name: t\ncodex: {runtime_idle: 0s}\nroles: [{name: a}]\n", 0, 0},
		{"role", "name: t\ncodex: {runtime_idle: 1h}\nroles: [{name: a, codex: {runtime_idle: 5m}}]\n", time.Hour, 5 * time.Minute},
		{"role never", "name: t\nroles: [{name: a, codex: {runtime_idle: 0}}]\n", DefaultRuntimeIdle, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("team.yaml", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Codex.RuntimeIdle != c.team || cfg.Roles[0].Codex.RuntimeIdle != c.roleA {
				t.Fatalf("runtime_idle team %s, role %s; want %s, %s", cfg.Codex.RuntimeIdle, cfg.Roles[0].Codex.RuntimeIdle, c.team, c.roleA)
			}
		})
	}
}

package team

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/battyhq/batty/codex"
)

// Keys accepted in each section of a team file.
var (
	topKeys     = []string{"name", "codex", "timeouts", "backlog_limit", "max_attempts", "on_alert", "alert_on_reply", "quota", "workspace", "accounts", "hosts", "limits", "roles", "schedules", "pricing", "budgets", "console", "telemetry"}
	quotaKeys   = []string{"scope", "backoff_max", "cooldown", "cooldown_max", "warn_pct"}
	quotaScopes = []string{QuotaScopeAccount, QuotaScopeAgent, QuotaScopeTeam}
	codexKeys   = []string{"bin", "model", "reasoning_effort", "sandbox", "approval_policy", "runtime", "runtime_idle", "app_server", "args", "config", "env", "codex_home", "context_window", "context_handoff_pct", "allow_sockets"}
	timeoutKeys = []string{"turn", "idle", "network_wait", "shutdown", "alert"}
	roleKeys    = []string{"name", "instances", "prompt", "talks_to", "cwd", "workspace", "hosts", "codex", "accounts"}
)

// removedKeys are keys a section of a team file once accepted and no
// longer does, each with the fix a problem about it gives (by section, as
// named in problems, then key).
var removedKeys = map[string]map[string]string{
	"team file": {
		"queue_depth": "delete the line: the daemon hands an agent one message at a time and the rest wait in its inbox, bounded by backlog_limit",
	},
}

// Allowed values of the enumerated Codex settings.
var (
	reasoningEfforts = []string{"minimal", "low", "medium", "high", "xhigh"}
	sandboxModes     = []string{codex.SandboxReadOnly, codex.SandboxWorkspaceWrite, codex.SandboxDangerFullAccess}
	approvalPolicies = []string{codex.ApprovalUntrusted, codex.ApprovalOnFailure, codex.ApprovalOnRequest, codex.ApprovalNever}
	runtimes         = []string{RuntimeExec, RuntimeAppServer}
	appServerModes   = []string{AppServerPerAgent, AppServerPerAccount}
)

// Defaults for keys that are absent from the file.
const (
	defaultBacklogLimit = 256
	maxBacklogLimit     = 100_000
	defaultTurn         = 60 * time.Minute
	defaultIdle         = 10 * time.Minute
	defaultShutdown     = 30 * time.Second
	defaultNetworkWait  = 30 * time.Minute
	defaultMaxAttempts  = 3
	maxMaxAttempts      = 100
	defaultBackoffMax   = 30 * time.Minute
	defaultCooldown     = 15 * time.Minute
	defaultCooldownMax  = 2 * time.Hour
)

// defaultCodex returns the Codex settings used when the file sets none.
func defaultCodex() CodexSettings {
	return CodexSettings{
		Bin:            "codex",
		Sandbox:        codex.SandboxWorkspaceWrite,
		ApprovalPolicy: codex.ApprovalNever,
		Runtime:        RuntimeExec,
		RuntimeIdle:    DefaultRuntimeIdle,
		AppServer:      AppServerPerAgent,
	}
}

// Load reads and validates the team file at path (see Parse). A file that
// cannot be read yields an error wrapping the underlying *fs.PathError.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading team file: %w", err)
	}
	return Parse(path, data)
}

// Parse validates the team file contents data. path is used verbatim in
// problem messages (an empty path stands for "team.yaml") and, made
// absolute, to resolve relative paths in the file; prompt files and working
// directories are checked on disk.
//
// On success every default is applied and the Config is complete. When the
// file is invalid the error is a *ValidationError listing every problem
// found, each with the file, line and column where possible. Parse never
// panics, whatever data holds.
func Parse(path string, data []byte) (*Config, error) {
	if path == "" {
		path = "team.yaml"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolving team file path %s: %w", path, err)
	}
	p := &parser{file: path, dir: filepath.Dir(abs)}
	cfg := &Config{
		Codex:        defaultCodex(),
		Workspace:    defaultWorkspace(),
		Timeouts:     Timeouts{Turn: defaultTurn, Idle: defaultIdle, NetworkWait: defaultNetworkWait, Shutdown: defaultShutdown, Alert: DefaultAlertTimeout},
		MaxAttempts:  defaultMaxAttempts,
		BacklogLimit: defaultBacklogLimit,
		Quota:        Quota{Scope: QuotaScopeAccount, BackoffMax: defaultBackoffMax, Cooldown: defaultCooldown, CooldownMax: defaultCooldownMax, WarnPct: DefaultWarnPct},
		Path:         abs,
		Dir:          p.dir,
		file:         path,
	}
	if root := p.decode(data); root != nil {
		p.config(root, cfg)
	}
	if len(p.problems) > 0 {
		return nil, &ValidationError{Problems: sortProblems(p.problems)}
	}
	cfg.lines = p.lines
	return cfg, nil
}

// yamlLineRE extracts the line number from a YAML syntax error.
var yamlLineRE = regexp.MustCompile(`^(?s)yaml: line (\d+): (.*)$`)

// anchorRE matches the YAML error for an alias to an undefined anchor.
var anchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// decode parses data as a single YAML document and returns its root node,
// or nil after recording a problem.
func (p *parser) decode(data []byte) (root *yaml.Node) {
	defer func() {
		if r := recover(); r != nil {
			p.add(nil, "", "cannot parse YAML: %v", r)
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(nil, "run `batty init` for an example", "file is empty")
		} else {
			p.syntax(err, data)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		at := &extra
		if at.Line == 0 && len(at.Content) > 0 {
			at = at.Content[0]
		}
		p.add(at, "remove the \"---\" separator and everything after it", "file contains more than one YAML document")
	case !errors.Is(err, io.EOF):
		p.syntax(err, data)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		p.add(nil, "run `batty init` for an example", "file is empty")
		return nil
	}
	return doc.Content[0]
}

// syntax records a YAML syntax error, keeping its line number when known.
func (p *parser) syntax(err error, data []byte) {
	msg := err.Error()
	pr := Problem{File: p.file, Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	if m := anchorRE.FindStringSubmatch(msg); m != nil {
		// The YAML library does not say where an unknown alias is used.
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
			pr.Line = 1 + bytes.Count(data[:i], []byte("\n"))
			pr.Column = 1 + i - (bytes.LastIndexByte(data[:i], '\n') + 1)
			pr.Hint = "define the anchor with &" + m[1] + " before using it"
		}
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if line, err := strconv.Atoi(m[1]); err == nil && line > 0 {
			pr.Line = line
			pr.Message = "invalid YAML: " + m[2]
			if wrong := wrongLine(data, line, m[2]); wrong > 0 {
				// The library names the line its block began on.
				pr.Line, pr.Column = wrong, wrongColumn(lineOf(data, wrong))
				pr.Hint = indentHint(data, wrong)
				p.problems = append(p.problems, pr)
				return
			}
			lines := bytes.Split(data, []byte("\n"))
			for _, l := range lines[max(0, line-2):min(len(lines), line+1)] {
				if bytes.HasPrefix(bytes.TrimLeft(l, " "), []byte("\t")) {
					pr.Hint = "indent with spaces; YAML does not allow tabs"
				}
			}
		}
	}
	p.problems = append(p.problems, pr)
}

// roleDraft is a role being validated, with the nodes needed for
// positioned cross-role messages.
type roleDraft struct {
	Role
	nameNode *yaml.Node // nil when the role has no valid name
	talksTo  []item
}

// config validates the root mapping into cfg.
func (p *parser) config(root *yaml.Node, cfg *Config) {
	d := deref(root)
	if d == nil || d.Kind != yaml.MappingNode {
		p.add(root, "start with \"name: my-team\" and a \"roles:\" list; run `batty init` for an example",
			"team file must be a mapping of keys, not %s", kindName(root))
		return
	}
	f, _ := p.mapping(d, "team file", topKeys)

	if e, ok := f["name"]; ok {
		if s, ok := p.name(e.val, "team name"); ok {
			cfg.Name = s
		}
	} else {
		p.add(d, `add e.g. "name: my-team"`, "missing required key \"name\"")
	}

	if e, ok := f["codex"]; ok {
		o := p.codex(e.val, "codex")
		cfg.Codex = o.apply(cfg.Codex)
		if o.binLine > 0 {
			p.setLine("codex.bin", o.binLine)
		}
	}

	if e, ok := f["timeouts"]; ok {
		tf, _ := p.mapping(e.val, "timeouts", timeoutKeys)
		for key, dst := range map[string]*time.Duration{
			"turn": &cfg.Timeouts.Turn, "idle": &cfg.Timeouts.Idle, "network_wait": &cfg.Timeouts.NetworkWait,
			"shutdown": &cfg.Timeouts.Shutdown, "alert": &cfg.Timeouts.Alert,
		} {
			if te, ok := tf[key]; ok {
				if v, ok := p.duration(te.val, "timeouts."+key); ok {
					*dst = v
				}
			}
		}
	}

	if e, ok := f["quota"]; ok {
		p.quota(e.val, &cfg.Quota)
	}

	if e, ok := f["max_attempts"]; ok {
		if v, ok := p.integer(e.val, "max_attempts", 1, maxMaxAttempts); ok {
			cfg.MaxAttempts = v
		}
	}

	if e, ok := f["backlog_limit"]; ok {
		if v, ok := p.integer(e.val, "backlog_limit", 1, maxBacklogLimit); ok {
			cfg.BacklogLimit = v
		}
	}

	p.alerts(f, cfg)
	p.pricing(f, cfg)
	p.console(f, cfg)
	p.telemetry(f, cfg)

	if e, ok := f["workspace"]; ok {
		p.workspace(e, &cfg.Workspace)
	}

	p.accounts(f, cfg)
	p.hosts(f, cfg)
	p.limits(f, cfg)

	before := len(p.problems)
	p.roles(d, f, cfg)
	p.checkAccountScope(f, cfg)
	p.schedules(f, cfg, len(p.problems) == before && len(cfg.Roles) > 0)
	p.budgets(f, cfg, len(p.problems) == before && len(cfg.Roles) > 0)
}

// roles validates the roles list into cfg.Roles.
func (p *parser) roles(d *yaml.Node, f map[string]entry, cfg *Config) {
	e, ok := f["roles"]
	if !ok {
		p.add(d, "add a \"roles:\" list with at least one role", "no roles defined")
		return
	}
	rn := deref(e.val)
	switch {
	case isNull(rn) || (rn.Kind == yaml.SequenceNode && len(rn.Content) == 0):
		p.add(e.key, "add at least one role, e.g. \"- name: engineer\"", "no roles defined")
		return
	case rn.Kind != yaml.SequenceNode:
		p.add(e.val, "write a list of roles, each starting with \"- name:\"", "roles must be a list, not %s", kindName(e.val))
		return
	}
	var drafts []*roleDraft
	for _, n := range rn.Content {
		if !p.visit(n) {
			return
		}
		drafts = append(drafts, p.role(n, cfg))
	}
	p.crossCheck(drafts, p.capAgents(rn.Content, drafts))
	for _, r := range drafts {
		cfg.Roles = append(cfg.Roles, r.Role)
	}
}

// quota decodes the quota mapping into q (which holds the defaults).
func (p *parser) quota(n *yaml.Node, q *Quota) {
	f, _ := p.mapping(n, "quota", quotaKeys)
	if e, ok := f["scope"]; ok {
		if v, ok := p.enum(e.val, "quota.scope", quotaScopes, false); ok {
			q.Scope = v
		}
	}
	for key, dst := range map[string]*time.Duration{
		"backoff_max": &q.BackoffMax, "cooldown": &q.Cooldown, "cooldown_max": &q.CooldownMax,
	} {
		if e, ok := f[key]; ok {
			if v, ok := p.duration(e.val, "quota."+key); ok {
				*dst = v
			}
		}
	}
	if e, ok := f["warn_pct"]; ok {
		if v, ok := p.integer(e.val, "quota.warn_pct", 1, 100); ok {
			q.WarnPct = v
		}
	}
	if q.CooldownMax < q.Cooldown {
		p.add(n, "raise quota.cooldown_max or lower quota.cooldown", "quota.cooldown_max (%s) is less than quota.cooldown (%s)", q.CooldownMax, q.Cooldown)
	}
	if q.BackoffMax < time.Minute {
		p.add(n, "set quota.backoff_max to 1m or more", "quota.backoff_max (%s) is less than the first back-off step (1m)", q.BackoffMax)
	}
}

// name decodes a required team or role name.
func (p *parser) name(n *yaml.Node, what string) (string, bool) {
	if isNull(n) {
		p.add(n, nameHint(""), "%s must not be empty", what)
		return "", false
	}
	s, ok := p.str(n, what)
	switch {
	case !ok:
		return "", false
	case len(s) > MaxNameLen && ValidName(s[:MaxNameLen]):
		p.add(n, nameHint(s), "%s is too long (%d characters, at most %d)", what, len(s), MaxNameLen)
		return "", false
	case !ValidName(s):
		p.add(n, nameHint(s), "invalid %s %.60q", what, s)
		return "", false
	}
	return s, true
}

// role validates one element of the roles list.
func (p *parser) role(n *yaml.Node, cfg *Config) *roleDraft {
	r := &roleDraft{Role: Role{Instances: 1, Cwd: cfg.Dir, Workspace: WorkspaceShared, Codex: cfg.Codex.clone(), Line: n.Line}}
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		p.add(n, "each role is a mapping starting with \"- name:\"", "role must be a mapping, not %s", kindName(n))
		return r
	}
	r.Line = d.Line
	f, _ := p.mapping(d, "role", roleKeys)

	if e, ok := f["name"]; ok {
		if s, ok := p.name(e.val, "role name"); ok {
			if s == Human {
				p.add(e.val, `"human" always means the person running batty; pick another name`, "role name %q is reserved", s)
			} else if slices.Contains(StateNames, s) {
				p.add(e.val, fmt.Sprintf("batty keeps its own state in .batty/state/%s.json, next to each agent's; pick another name", s), "role name %q is reserved", s)
			} else {
				r.Name, r.nameNode = s, e.val
			}
		}
	} else {
		p.add(d, `add e.g. "name: engineer"`, "role is missing required key \"name\"")
	}

	if e, ok := f["instances"]; ok {
		if v, ok := p.integer(e.val, "instances", 1, MaxInstances); ok {
			r.Instances = v
		}
	}

	if e, ok := f["prompt"]; ok {
		if s, ok := p.str(e.val, "prompt"); ok && s != "" {
			if abs, ok := p.path(e.val, s); ok && p.checkFile(e.val, "prompt file", s, abs, false) {
				r.Prompt = abs
				r.Instructions = p.instructions(e.val, s, abs)
			}
		}
	}

	if e, ok := f["cwd"]; ok {
		if s, ok := p.str(e.val, "cwd"); ok && s != "" {
			if abs, ok := p.path(e.val, s); ok && p.checkFile(e.val, "cwd", s, abs, true) {
				r.Cwd = abs
			}
		}
	}

	if e, ok := f["workspace"]; ok {
		p.roleWorkspace(e.val, r)
	}

	if e, ok := f["talks_to"]; ok {
		r.talksTo, _ = p.strList(e.val, "talks_to")
	}

	var hostsNode *yaml.Node
	if e, ok := f["hosts"]; ok {
		r.Hosts = p.roleHosts(e.val)
		hostsNode = e.key
	}

	var ownHome *yaml.Node
	if e, ok := f["codex"]; ok {
		o := p.codex(e.val, "codex")
		r.Codex = o.apply(cfg.Codex)
		if o.binLine > 0 && r.Name != "" {
			p.setLine("roles."+r.Name+".codex.bin", o.binLine)
		}
		if _, ok := o.strs["codex_home"]; ok {
			ownHome = e.val
		}
	}

	if e, ok := f["accounts"]; ok {
		p.roleAccounts(e.val, cfg, r)
		switch {
		case len(r.Accounts) == 0:
		case ownHome != nil:
			p.add(ownHome, "remove codex.codex_home from the role: its agents run on the accounts it lists", "a role with accounts may not set codex.codex_home")
		default:
			// The preferred account is where the agents start.
			r.Codex.CodexHome = r.Accounts[0].CodexHome
		}
	}
	if e, ok := f["workspace"]; ok && r.Workspace == WorkspaceWorktree && r.Codex.Sandbox == codex.SandboxReadOnly {
		// Its worktree is in the state directory, which its permission
		// profile denies and a read-only agent cannot be given back.
		p.add(e.val, "set workspace: shared on a role that plans, or sandbox: workspace-write on one that writes code",
			"a read-only role cannot have a worktree: it would have nothing to commit, and cannot read one in batty's state directory")
	}
	p.sandboxSettings(n, f, r)
	p.remoteRole(hostsNode, f, r)
	return r
}

// sandboxSettings refuses, at the role's codex section (or the role), the
// sandbox settings its agents' permission profile could not be made of
// (they would otherwise stop each agent at its start): a value Codex
// would not read, a sandbox mode set besides codex.sandbox (Codex would
// take it over the profile), a writable root that is not absolute. Only
// for the sandboxes that get a profile (workspace-write, read-only).
func (p *parser) sandboxSettings(n *yaml.Node, f map[string]entry, r *roleDraft) {
	if r.Codex.Sandbox != codex.SandboxWorkspaceWrite && r.Codex.Sandbox != codex.SandboxReadOnly {
		return
	}
	at := n
	if e, ok := f["codex"]; ok {
		at = e.key
	}
	ss, err := codex.ReadSandboxSettings(r.Codex.Sandbox, r.Codex.Config, r.Codex.Args)
	switch {
	case err != nil:
		p.add(at, "write sandbox_workspace_write settings as Codex's config.toml takes them", "role %s's codex settings: %v", r.Name, err)
	case ss.ModeSetBy != "":
		p.add(at, "set the sandbox with codex.sandbox (read-only, workspace-write or danger-full-access) and drop the other",
			"role %s: %s sets a sandbox mode, which Codex would take over the permission profile batty gives its agents", r.Name, ss.ModeSetBy)
	}
	for _, d := range ss.WritableRoots {
		if !filepath.IsAbs(d) {
			p.add(at, "write the directory as an absolute path", "role %s: sandbox_workspace_write.writable_roots %.60q is not an absolute path", r.Name, d)
		}
	}
}

// path expands a leading "~/" and makes s absolute relative to the team
// file's directory.
func (p *parser) path(n *yaml.Node, s string) (string, bool) {
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			p.add(n, "write an absolute path", "cannot expand %.60q: %v", s, err)
			return "", false
		}
		s = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.dir, s)
	}
	return filepath.Clean(s), true
}

// checkFile reports unless abs is a readable file (or, with wantDir, an
// existing directory).
func (p *parser) checkFile(n *yaml.Node, what, written, abs string, wantDir bool) bool {
	hint := "relative paths are resolved against " + p.dir
	if filepath.IsAbs(written) {
		hint = ""
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.add(n, hint, "%s %.80q does not exist", what, written)
		return false
	case err != nil:
		p.add(n, "", "%s %.80q: %v", what, written, errors.Unwrap(err))
		return false
	case wantDir && !st.IsDir():
		p.add(n, "", "%s %.80q is not a directory", what, written)
		return false
	case !wantDir && st.IsDir():
		p.add(n, "", "%s %.80q is a directory, not a file", what, written)
		return false
	}
	if !wantDir {
		fh, err := os.Open(abs)
		if err != nil {
			p.add(n, "", "%s %.80q is not readable: %v", what, written, errors.Unwrap(err))
			return false
		}
		fh.Close()
	}
	return true
}

// capAgents refuses a team of more than MaxAgents agents, naming the role
// (nodes[i] is drafts[i]'s node) whose instances cross the limit. It
// reports whether the team is within the limit.
func (p *parser) capAgents(nodes []*yaml.Node, drafts []*roleDraft) bool {
	total, over := 0, -1
	for i, r := range drafts {
		total += max(r.Instances, 1)
		if over < 0 && total > MaxAgents {
			over = i
		}
	}
	if over < 0 {
		return true
	}
	p.add(nodes[over], fmt.Sprintf("lower instances or remove roles; a team may have at most %d agents", MaxAgents),
		"team has %d agents, more than the limit of %d (reached at this role)", total, MaxAgents)
	return false
}

// crossCheck validates what depends on several roles: unique role and agent
// names, agent name lengths and talks_to references. Agent names are
// expanded only for a team within MaxAgents (expandAgents).
func (p *parser) crossCheck(drafts []*roleDraft, expandAgents bool) {
	var names []string
	byName := map[string]*roleDraft{}
	for _, r := range drafts {
		if r.nameNode == nil {
			continue
		}
		if first, dup := byName[r.Name]; dup {
			p.add(r.nameNode, fmt.Sprintf("first defined at line %d", first.nameNode.Line), "duplicate role name %q", r.Name)
			r.nameNode = nil // skip it in the checks below
			continue
		}
		byName[r.Name] = r
		names = append(names, r.Name)
	}

	// Role names and agent names share one namespace (`batty send` accepts
	// both), so every name a role claims must be unclaimed by other roles.
	owner := map[string]*roleDraft{}
	for _, r := range drafts {
		if r.nameNode == nil {
			continue
		}
		claims := []string{r.Name}
		if r.Instances > 1 && expandAgents {
			for i := 1; i <= r.Instances; i++ {
				claims = append(claims, agentName(r.Name, r.Instances, i))
			}
			if last := claims[len(claims)-1]; len(last) > MaxNameLen {
				p.add(r.nameNode, fmt.Sprintf("shorten the role name to at most %d characters", MaxNameLen-(len(last)-len(r.Name))),
					"agent name %q would be %d characters long; the limit is %d", last, len(last), MaxNameLen)
			}
		}
		for _, c := range claims {
			prev, taken := owner[c]
			if !taken {
				owner[c] = r
				continue
			}
			isAgent := func(d *roleDraft) bool { return c != d.Name || d.Instances == 1 }
			where := fmt.Sprintf("role %q on line %d", prev.Name, prev.nameNode.Line)
			if isAgent(r) && isAgent(prev) {
				p.add(r.nameNode, "also an agent of "+where+"; rename one of the roles", "duplicate agent name %q", c)
			} else {
				p.add(r.nameNode, fmt.Sprintf("%s; `batty send %s` would be ambiguous, rename one of the roles", where, c),
					"name %q is used both as a role name and as an agent name", c)
			}
		}
	}

	known := append([]string{Human}, names...)
	for _, r := range drafts {
		for _, t := range r.talksTo {
			switch {
			case t.val == Human:
			case byName[t.val] != nil:
				if !slices.Contains(r.TalksTo, t.val) {
					r.TalksTo = append(r.TalksTo, t.val)
				}
			default:
				hint := didYouMean(t.val, known)
				if hint == "" {
					hint = "roles: " + strings.Join(names, ", ")
				}
				p.add(t.node, hint, "talks_to names unknown role %.60q", t.val)
			}
		}
	}
}

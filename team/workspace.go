package team

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/battyhq/batty/protect"
)

// Workspace kinds: where a role's agents work (a role's workspace key).
const (
	// WorkspaceShared runs the agents in the project checkout itself, all
	// of them in the same files (the default).
	WorkspaceShared = "shared"
	// WorkspaceWorktree gives each agent a git worktree of its own, on a
	// branch of its own; its work reaches the base branch through the
	// merge queue.
	WorkspaceWorktree = "worktree"
)

// Limits of the workspace commands' run times.
const (
	// DefaultVerifyTimeout is how long workspace.verify may run by default.
	DefaultVerifyTimeout = 30 * time.Minute
	// DefaultSetupTimeout is how long workspace.setup may run by default.
	DefaultSetupTimeout = 10 * time.Minute
	// MaxWorkspaceTimeout bounds verify_timeout and setup_timeout.
	MaxWorkspaceTimeout = 24 * time.Hour
)

// ErrNotGitRepository and ErrNoBaseBranch classify the errors of the check
// given to Config.WorkspaceProblems, which picks the fix it suggests by
// them (errors.Is).
var (
	// ErrNotGitRepository says the project is not in a git repository.
	ErrNotGitRepository = errors.New("not a git repository")
	// ErrNoBaseBranch says the base branch does not exist (or, with no
	// base set, that no branch is checked out to build on).
	ErrNoBaseBranch = errors.New("base branch not found")
)

var (
	workspaceKeys  = []string{"base", "verify", "setup", "verify_timeout", "setup_timeout", "sandbox", "review", "protected"}
	workspaceKinds = []string{WorkspaceShared, WorkspaceWorktree}
	reviewKinds    = []string{ReviewNone, ReviewHuman}
	sandboxKeys    = []string{"writable", "verify_network", "setup_network"}
)

// Review gates of the merge queue (workspace.review).
const (
	// ReviewNone lands a branch once verify passes (the default).
	ReviewNone = "none"
	// ReviewHuman makes a landing an agent asked for wait, after verify
	// passed, for the human's approval (batty approve) or rejection.
	ReviewHuman = "human"
)

// SandboxOff is the value of workspace.sandbox that runs verify and setup
// without a sandbox.
const SandboxOff = "off"

// WorkspaceSandbox is workspace.sandbox: how verify and setup run. By
// default each runs inside Codex's sandbox (`codex sandbox`), writing
// only its worktree, a private temporary directory and Writable.
type WorkspaceSandbox struct {
	// Off runs them without a sandbox, as the user (sandbox: off).
	Off bool
	// Writable are the directories besides the worktree they may write
	// (caches such as ~/.cache/go-build): absolute, cleaned, "~/"
	// expanded, none holding the team file's directory or inside its
	// .batty. May be nil.
	Writable []string
	// VerifyNetwork lets verify reach the network (false by default).
	VerifyNetwork bool
	// SetupNetwork lets setup reach the network (true by default).
	SetupNetwork bool
	// Line is the line of the sandbox key, 0 when absent.
	Line int
}

// WorkspaceSettings are the team's settings for agents that work in git
// worktrees (the top-level workspace mapping). They apply only to roles
// with Workspace == WorkspaceWorktree.
type WorkspaceSettings struct {
	// Base is the branch the team builds on, a valid branch name
	// (CheckBranchName), or empty for the branch checked out when batty
	// starts (resolved by the daemon, not here).
	Base string
	// Verify is a shell command that must pass in an agent's worktree
	// before its work lands on Base; empty when landing needs no check.
	Verify string
	// Setup is a shell command run once in each new worktree; empty for
	// none.
	Setup string
	// VerifyTimeout bounds one run of Verify: > 0 and at most
	// MaxWorkspaceTimeout, DefaultVerifyTimeout unless set.
	VerifyTimeout time.Duration
	// SetupTimeout bounds one run of Setup: > 0 and at most
	// MaxWorkspaceTimeout, DefaultSetupTimeout unless set.
	SetupTimeout time.Duration
	// Sandbox is how Verify and Setup run (workspace.sandbox).
	Sandbox WorkspaceSandbox
	// Review is the merge queue's review gate: ReviewHuman (an agent's
	// landing waits for the human's approval once verify passed), or ""
	// for none (the default; `review: none` in the file).
	Review string
	// Protected are the team's protected path patterns (workspace.protected,
	// each valid by protect.Check), added to protect.Defaults: a landing
	// whose merge changes a path they match waits for the human's review,
	// whatever Review says. Nil when the file adds none.
	Protected []string
	// Line is the line of the team file's workspace key, 0 when the file
	// has no workspace mapping (absent or null).
	Line int
}

// defaultWorkspace returns the workspace settings used when the file sets
// none.
func defaultWorkspace() WorkspaceSettings {
	return WorkspaceSettings{VerifyTimeout: DefaultVerifyTimeout, SetupTimeout: DefaultSetupTimeout,
		Sandbox: WorkspaceSandbox{SetupNetwork: true}}
}

// ReviewsAgents reports whether a landing an agent asks for waits for the
// human's review (workspace.review: human).
func (ws WorkspaceSettings) ReviewsAgents() bool { return ws.Review == ReviewHuman }

// UsesWorktrees reports whether any role's agents work in worktrees
// (Workspace == WorkspaceWorktree). An empty Workspace, possible only in a
// Config built by hand, counts as WorkspaceShared.
func (c *Config) UsesWorktrees() bool {
	return slices.ContainsFunc(c.Roles, func(r Role) bool { return r.Workspace == WorkspaceWorktree })
}

// WorkspaceProblems runs the checks of the workspace settings that need
// git, which the parser cannot run. When no role uses worktrees it returns
// nil without calling check. Otherwise it calls check(c.Workspace.Base)
// once, synchronously, and turns a non-nil error into one Problem,
// positioned at the workspace key or, without a workspace mapping, at the
// first role that uses worktrees. check must not be nil; it says whether
// the project directory is a git repository (else an error wrapping
// ErrNotGitRepository) and whether base exists (else an error wrapping
// ErrNoBaseBranch); the fix suggested depends on which it wraps, and any
// other error is reported without one. WorkspaceProblems itself runs
// nothing; the result can be reported as a *ValidationError.
func (c *Config) WorkspaceProblems(check func(base string) error) []Problem {
	if !c.UsesWorktrees() {
		return nil
	}
	err := check(c.Workspace.Base)
	if err == nil {
		return nil
	}
	var roles []string
	line := c.Workspace.Line
	for _, r := range c.Roles {
		if r.Workspace == WorkspaceWorktree {
			roles = append(roles, r.Name)
			if line == 0 {
				line = r.Line
			}
		}
	}
	pr := Problem{File: c.file, Line: line, Message: "workspace: " + err.Error()}
	if pr.File == "" {
		pr.File = c.Path
	}
	switch {
	case errors.Is(err, ErrNotGitRepository):
		word := "role"
		if len(roles) > 1 {
			word = "roles"
		}
		pr.Hint = fmt.Sprintf("run batty in a git repository (git init) or set workspace: shared on %s %s", word, strings.Join(roles, ", "))
	case errors.Is(err, ErrNoBaseBranch):
		pr.Hint = "create the branch or set workspace.base"
	}
	return []Problem{pr}
}

// CheckBranchName reports whether name is a valid git branch name, by the
// rules of `git check-ref-format --branch` for a short name (and refusing
// "@" too, git's shorthand for HEAD). The error says which rule name
// breaks. It is pure: it neither runs git nor looks at a repository, so it
// cannot say whether the branch exists.
func CheckBranchName(name string) error {
	switch {
	case name == "":
		return errors.New("it is empty")
	case name == "@" || name == "HEAD":
		return fmt.Errorf("%q is not a branch name to git", name)
	case strings.HasPrefix(name, "-"):
		return errors.New(`it starts with "-"`)
	case strings.HasPrefix(name, "/"):
		return errors.New(`it starts with "/"`)
	case strings.HasSuffix(name, "/"):
		return errors.New(`it ends with "/"`)
	case strings.HasSuffix(name, "."):
		return errors.New(`it ends with "."`)
	case strings.Contains(name, ".."):
		return errors.New(`it contains ".."`)
	case strings.Contains(name, "//"):
		return errors.New(`it contains "//"`)
	case strings.Contains(name, "@{"):
		return errors.New(`it contains "@{"`)
	}
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f:
			return errors.New("it contains a control character")
		case r == ' ':
			return errors.New("it contains a space")
		case strings.ContainsRune(`~^:?*[\`, r):
			return fmt.Errorf("it contains %q", r)
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		switch {
		case strings.HasPrefix(part, "."):
			return fmt.Errorf("its part %.60q starts with \".\"", part)
		case strings.HasSuffix(part, ".lock"):
			return fmt.Errorf("its part %.60q ends with \".lock\"", part)
		}
	}
	return nil
}

// workspace decodes the top-level workspace mapping of entry e into ws
// (which holds the defaults). A null value counts as absent.
func (p *parser) workspace(e entry, ws *WorkspaceSettings) {
	if isNull(e.val) {
		return
	}
	ws.Line = e.key.Line
	if d := deref(e.val); d == nil || d.Kind != yaml.MappingNode {
		p.add(e.val, "the team's workspace is a mapping of base, verify, setup, verify_timeout, setup_timeout, sandbox, review and protected; `workspace: worktree` goes on a role",
			"workspace must be a mapping, not %s", kindName(e.val))
		return
	}
	f, ok := p.mapping(e.val, "workspace", workspaceKeys)
	if !ok {
		return
	}
	if be, ok := f["base"]; ok {
		if s, ok := p.str(be.val, "workspace.base"); ok && s != "" {
			if err := CheckBranchName(s); err != nil {
				p.add(be.val, `name a branch, e.g. "main", or leave base out for the branch checked out when batty starts`,
					"invalid workspace.base %.60q: %v", s, err)
			} else {
				ws.Base = s
			}
		}
	}
	for key, dst := range map[string]*string{"verify": &ws.Verify, "setup": &ws.Setup} {
		ce, ok := f[key]
		if !ok {
			continue
		}
		if d := deref(ce.val); d != nil && d.Kind == yaml.SequenceNode {
			p.add(ce.val, `write the command as one string, run by the shell, e.g. "npm ci && npm run build"`, "workspace.%s must be a string, not a list", key)
			continue
		}
		if s, ok := p.str(ce.val, "workspace."+key); ok {
			if s != "" && strings.TrimSpace(s) == "" {
				p.add(ce.val, "write a shell command, or leave the key out", "workspace.%s is blank", key)
				continue
			}
			*dst = s
		}
	}
	for key, dst := range map[string]*time.Duration{"verify_timeout": &ws.VerifyTimeout, "setup_timeout": &ws.SetupTimeout} {
		te, ok := f[key]
		if !ok {
			continue
		}
		if v, ok := p.duration(te.val, "workspace."+key); ok {
			if v > MaxWorkspaceTimeout {
				p.add(te.val, "lower it to 24h or less", "workspace.%s must be at most 24h, got %.40s", key, deref(te.val).Value)
				continue
			}
			*dst = v
		}
	}
	if se, ok := f["sandbox"]; ok {
		p.sandbox(se, &ws.Sandbox)
	}
	if re, ok := f["review"]; ok && !isNull(re.val) {
		p.review(re.val, ws)
	}
	if pe, ok := f["protected"]; ok {
		p.protected(pe.val, ws)
	}
}

// maxProtected bounds the patterns of workspace.protected.
const maxProtected = 256

// protected decodes workspace.protected (node n), a list of path patterns
// (protect.Check), into ws. A null value adds none.
func (p *parser) protected(n *yaml.Node, ws *WorkspaceSettings) {
	const what = "workspace.protected"
	items, ok := p.strList(n, what)
	if !ok {
		return
	}
	if len(items) > maxProtected {
		p.add(n, "", "%s has %d patterns, at most %d", what, len(items), maxProtected)
		return
	}
	for _, it := range items {
		if err := protect.Check(it.val); err != nil {
			p.add(it.node, `write a path from the repository's top level as in .gitignore, e.g. "deploy/" or "/scripts/release.sh"`,
				"invalid %s element %.60q: %v", what, it.val, err)
			continue
		}
		if !slices.Contains(ws.Protected, it.val) {
			ws.Protected = append(ws.Protected, it.val)
		}
	}
}

// review decodes workspace.review (node n), one of reviewKinds, into ws.
func (p *parser) review(n *yaml.Node, ws *WorkspaceSettings) {
	const kinds = "one of: none (a landing lands once verify passes), human (an agent's landing waits for batty approve)"
	s, ok := p.str(n, "workspace.review")
	if !ok {
		return
	}
	if !slices.Contains(reviewKinds, s) {
		hint := kinds
		if c := closest(s, reviewKinds); c != "" {
			hint = fmt.Sprintf("did you mean %q? %s", c, kinds)
		}
		p.add(n, hint, "invalid workspace.review %.60q", s)
		return
	}
	ws.Review = ""
	if s == ReviewHuman {
		ws.Review = s
	}
}

// sandbox decodes workspace.sandbox (entry e) into sb, which holds the
// defaults: off, or a mapping of writable, verify_network and
// setup_network. A null value keeps the defaults.
func (p *parser) sandbox(e entry, sb *WorkspaceSandbox) {
	if isNull(e.val) {
		return
	}
	sb.Line = e.key.Line
	const shape = "write `sandbox: off` to run verify and setup without a sandbox, or a mapping of writable, verify_network and setup_network"
	if d := deref(e.val); d != nil && d.Kind == yaml.ScalarNode {
		if d.ShortTag() == "!!str" && d.Value == SandboxOff {
			p.visit(e.val)
			sb.Off = true
			return
		}
		p.add(e.val, shape, "invalid workspace.sandbox %.40q", d.Value)
		return
	}
	if d := deref(e.val); d == nil || d.Kind != yaml.MappingNode {
		p.add(e.val, shape, "workspace.sandbox must be off or a mapping, not %s", kindName(e.val))
		return
	}
	f, ok := p.mapping(e.val, "workspace.sandbox", sandboxKeys)
	if !ok {
		return
	}
	if we, ok := f["writable"]; ok {
		items, _ := p.strList(we.val, "workspace.sandbox.writable")
		for _, it := range items {
			if w, ok := p.writableDir(it); ok {
				sb.Writable = append(sb.Writable, w)
			}
		}
	}
	for key, dst := range map[string]*bool{"verify_network": &sb.VerifyNetwork, "setup_network": &sb.SetupNetwork} {
		if be, ok := f[key]; ok {
			if v, ok := p.boolean(be.val, "workspace.sandbox."+key); ok {
				*dst = v
			}
		}
	}
}

// writableDir checks one element of workspace.sandbox.writable and
// returns it absolute: written absolute or from "~/", valid UTF-8, and
// neither holding the team file's directory (the project) nor inside its
// .batty (the team's state and inboxes), which the sandbox exists to
// keep from the commands.
func (p *parser) writableDir(it item) (string, bool) {
	const what = "workspace.sandbox.writable"
	switch {
	case !utf8.ValidString(it.val):
		p.add(it.node, "", "%s element %.60q is not valid UTF-8", what, it.val)
		return "", false
	case !strings.HasPrefix(it.val, "/") && !strings.HasPrefix(it.val, "~/"):
		p.add(it.node, `write an absolute path or one from your home directory, e.g. "~/.cache/go-build"`,
			"%s element %.60q is not an absolute path", what, it.val)
		return "", false
	}
	w, ok := p.path(it.node, it.val)
	if !ok {
		return "", false
	}
	project, err := filepath.Abs(p.dir)
	if err != nil {
		p.add(it.node, "", "%s: %v", what, err)
		return "", false
	}
	batty := filepath.Join(project, ".batty")
	switch {
	case within(project, w):
		p.add(it.node, "list the cache directories the commands need, not a directory that holds the project",
			"%s element %.60q holds the project %s: the commands could change its checkout and the team's state", what, it.val, project)
		return "", false
	case within(w, batty):
		p.add(it.node, "the worktree is writable already; list directories outside .batty",
			"%s element %.60q is inside %s, the team's state", what, it.val, batty)
		return "", false
	}
	return w, true
}

// within reports whether path is dir or below it (both clean and
// absolute).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// roleWorkspace decodes a role's workspace key (shared or worktree) into r.
// A null value keeps the default.
func (p *parser) roleWorkspace(n *yaml.Node, r *roleDraft) {
	if isNull(n) {
		return
	}
	const kinds = "one of: shared (the project checkout), worktree (a git worktree per agent)"
	if d := deref(n); d != nil && d.Kind == yaml.MappingNode {
		p.add(n, "a role's workspace is shared or worktree; base, verify and setup go in the top-level workspace mapping",
			"role workspace must be a string, not a mapping")
		return
	}
	s, ok := p.str(n, "role workspace")
	if !ok {
		return
	}
	if !slices.Contains(workspaceKinds, s) {
		hint := kinds
		if c := closest(s, workspaceKinds); c != "" {
			hint = fmt.Sprintf("did you mean %q? %s", c, kinds)
		}
		p.add(n, hint, "invalid role workspace %.60q", s)
		return
	}
	r.Workspace = s
}

// Package writable says where the agents of a team may write — and so
// what batty must never run, trust or keep there: the programs the team
// file names (on_alert, codex.bin, a host's command), which batty runs as
// the user outside any sandbox, and the state directory.
//
// Roots computes the directories from the team file and the environment
// (a pure function); CheckPrograms looks at the file system to find
// where each named program really is.
package writable

import (
	"path/filepath"
	"slices"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// Root is a directory where an agent of the team, or code that verify or
// setup run, may write: anything below it too.
type Root struct {
	// Dir is the directory, absolute and cleaned.
	Dir string
	// Why says who may write there, for messages: "the project checkout",
	// "role eng's cwd", "/tmp (writable to role eng's workspace-write
	// sandbox)".
	Why string
}

// Env is what Roots reads of the environment batty runs in.
type Env struct {
	// TmpDir is $TMPDIR ("" when unset): Codex's workspace-write sandbox
	// makes it writable.
	TmpDir string
}

// Roots returns the directories where an agent of cfg (its state under
// l) may write, each once, in a stable order:
//
//   - the project checkout (l.Root()) and the worktrees directory
//     (l.WorktreesDir());
//   - every role's cwd;
//   - workspace.sandbox.writable (what verify and setup may write);
//   - for each role whose sandbox is workspace-write as Codex reads its
//     settings (codex.ReadSandboxSettings: codex.sandbox, or -s/--sandbox
//     in its codex.args; batty's -s outranks a sandbox_mode of -c or
//     codex.config):
//     its writable roots (sandbox_workspace_write.writable_roots in
//     codex.config or a -c of codex.args, and --add-dir), made absolute
//     against its cwd; /tmp unless sandbox_workspace_write.exclude_slash_tmp
//     is true; and its $TMPDIR (codex.env's, else env's) unless
//     sandbox_workspace_write.exclude_tmpdir_env_var is true — Codex
//     makes both writable.
//
// A role in read-only writes nothing but its outbox; one in
// danger-full-access has no boundary (it may write anywhere, and nothing
// here protects against it). Paths are compared as written: a caller
// that looks at the file system resolves links (Resolve). It is a pure
// function.
func Roots(cfg *team.Config, l project.Layout, env Env) []Root {
	var out []Root
	add := func(dir, why string) {
		if dir == "" || !filepath.IsAbs(dir) {
			return
		}
		dir = filepath.Clean(dir)
		if !slices.ContainsFunc(out, func(r Root) bool { return r.Dir == dir }) {
			out = append(out, Root{Dir: dir, Why: why})
		}
	}
	add(l.Root(), "the project checkout")
	add(l.WorktreesDir(), "the agents' worktrees")
	for _, r := range cfg.Roles {
		add(r.Cwd, "role "+r.Name+"'s cwd")
	}
	for _, w := range cfg.Workspace.Sandbox.Writable {
		add(w, "workspace.sandbox.writable")
	}
	for _, r := range cfg.Roles {
		// Unreadable settings are read as far as they go (an unreadable
		// exclusion as false): the agent's permission profile refuses
		// them, and Codex would too.
		s, _ := codex.ReadSandboxSettings(r.Codex.Sandbox, r.Codex.Config, r.Codex.Args)
		if s.Mode != codex.SandboxWorkspaceWrite {
			continue
		}
		for _, d := range slices.Concat(s.WritableRoots, s.AddDirs) {
			if !filepath.IsAbs(d) {
				d = filepath.Join(r.Cwd, d)
			}
			add(d, "a writable root of role "+r.Name+"'s sandbox")
		}
		if !s.ExcludeSlashTmp {
			add("/tmp", "writable in role "+r.Name+"'s workspace-write sandbox")
		}
		if !s.ExcludeTmpdirEnvVar {
			tmp, ok := r.Codex.Env["TMPDIR"]
			if !ok {
				tmp = env.TmpDir
			}
			add(tmp, "$TMPDIR of role "+r.Name+"'s workspace-write sandbox")
		}
	}
	return out
}

// Within returns the first of roots that holds path (path itself or
// below it), compared cleaned, as written. It is a pure function.
func Within(path string, roots []Root) (Root, bool) {
	for _, r := range roots {
		if project.Inside(r.Dir, path) {
			return r, true
		}
	}
	return Root{}, false
}

// Dirs are the directories of roots.
func Dirs(roots []Root) []string {
	out := make([]string, len(roots))
	for i, r := range roots {
		out[i] = r.Dir
	}
	return out
}

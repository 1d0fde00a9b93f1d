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
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/battyhq/batty/preflight"
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

// Sandbox modes of codex.sandbox.
const (
	sandboxWorkspaceWrite = "workspace-write"
	sandboxFullAccess     = "danger-full-access"
)

// Roots returns the directories where an agent of cfg (its state under
// l) may write, each once, in a stable order:
//
//   - the project checkout (l.Root()) and the worktrees directory
//     (l.WorktreesDir());
//   - every role's cwd;
//   - workspace.sandbox.writable (what verify and setup may write);
//   - for each role whose sandbox is workspace-write (codex.sandbox, or
//     -s/--sandbox in its codex.args; batty's -s outranks a sandbox_mode
//     of -c or codex.config):
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
		s := sandboxOf(r.Codex)
		if s.mode != sandboxWorkspaceWrite {
			continue
		}
		for _, d := range s.roots {
			if !filepath.IsAbs(d) {
				d = filepath.Join(r.Cwd, d)
			}
			add(d, "a writable root of role "+r.Name+"'s sandbox")
		}
		if !s.excludeTmp {
			add("/tmp", "writable in role "+r.Name+"'s workspace-write sandbox")
		}
		if !s.excludeTmpDir {
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
	path = filepath.Clean(path)
	for _, r := range roots {
		rel, err := filepath.Rel(r.Dir, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
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

// sandbox is what Codex makes of a role's sandbox settings.
type sandbox struct {
	mode                      string
	roots                     []string
	excludeTmp, excludeTmpDir bool
}

// sandboxOf reads the sandbox of c as Codex takes it: codex.sandbox and
// codex.config, then codex.args (later settings win, as on codex's
// command line, where the args come last).
func sandboxOf(c team.CodexSettings) sandbox {
	s := sandbox{mode: c.Sandbox}
	for _, k := range slices.Sorted(maps.Keys(c.Config)) {
		s.setting(k, c.Config[k])
	}
	overrides, _, _ := preflight.ArgsSettings(c.Args)
	for _, kv := range overrides {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			s.setting(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		next := func() string {
			if i+1 < len(c.Args) {
				i++
				return c.Args[i]
			}
			return ""
		}
		switch {
		case a == "--add-dir":
			s.roots = append(s.roots, next())
		case strings.HasPrefix(a, "--add-dir="):
			s.roots = append(s.roots, strings.TrimPrefix(a, "--add-dir="))
		case a == "-s" || a == "--sandbox":
			s.mode = next()
		case strings.HasPrefix(a, "--sandbox="):
			s.mode = strings.TrimPrefix(a, "--sandbox=")
		case a == "--dangerously-bypass-approvals-and-sandbox" || a == "--yolo":
			s.mode = sandboxFullAccess
		case a == "--full-auto":
			s.mode = sandboxWorkspaceWrite
		}
	}
	return s
}

// setting applies one Codex configuration key and its TOML value.
func (s *sandbox) setting(key, value string) {
	switch key {
	case "sandbox_workspace_write.writable_roots":
		if v, ok := tomlStrings(value); ok {
			s.roots = append(s.roots, v...)
		}
	case "sandbox_workspace_write.exclude_slash_tmp":
		s.excludeTmp = value == "true"
	case "sandbox_workspace_write.exclude_tmpdir_env_var":
		s.excludeTmpDir = value == "true"
	case "sandbox_workspace_write":
		for k, v := range tomlInlineTable(value) {
			s.setting(key+"."+k, v)
		}
	}
}

// tomlString reads a TOML basic or literal string.
func tomlString(v string) (string, bool) {
	v = strings.TrimSpace(v)
	switch {
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		s, err := strconv.Unquote(v)
		return s, err == nil
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return v[1 : len(v)-1], true
	}
	return "", false
}

// splitTop splits s at each sep outside quotes and brackets.
func splitTop(s string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// tomlStrings reads a one-line TOML array of strings; ok is false for
// anything else.
func tomlStrings(v string) ([]string, bool) {
	v = strings.TrimSpace(v)
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, false
	}
	var out []string
	for _, item := range splitTop(v[1:len(v)-1], ',') {
		if strings.TrimSpace(item) == "" {
			continue // a trailing comma
		}
		s, ok := tomlString(item)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// tomlInlineTable reads a one-line TOML inline table into its keys and
// their values as written; nil when v is none.
func tomlInlineTable(v string) map[string]string {
	v = strings.TrimSpace(v)
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return nil
	}
	out := map[string]string{}
	for _, kv := range splitTop(v[1:len(v)-1], ',') {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if s, ok := tomlString(k); ok {
			k = s
		}
		out[k] = strings.TrimSpace(val)
	}
	return out
}

package codex

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// ProfileName is the name of the permission profile batty gives a
// sandboxed agent (default_permissions = "batty").
const ProfileName = "batty"

// The built-in profiles of Codex a permission profile extends.
const (
	// ExtendsWorkspace is :workspace: the working directory, /tmp and
	// $TMPDIR writable (with .git, .codex and .agents kept read-only),
	// everything else readable.
	ExtendsWorkspace = ":workspace"
	// ExtendsReadOnly is :read-only: everything readable, nothing
	// writable, /tmp and $TMPDIR included.
	ExtendsReadOnly = ":read-only"
)

// Special paths of a permission profile's filesystem rules.
const (
	// SlashTmp is /tmp, writable under the :workspace profile.
	SlashTmp = ":slash_tmp"
	// Tmpdir is $TMPDIR, writable under the :workspace profile.
	Tmpdir = ":tmpdir"
)

// Accesses of a filesystem rule.
const (
	AccessRead  = "read"
	AccessWrite = "write"
	AccessNone  = "none"
)

// Permissions is a Codex permission profile (`default_permissions`,
// `[permissions.<name>]`, Codex ≥ 0.169) over one of Codex's built-in
// profiles (Extends: :workspace or :read-only), plus these rules. A rule
// on a path holds for everything below it but where a rule on a longer
// path says otherwise: a Write path inside a Deny path is writable, its
// siblings unreadable.
//
// A profile replaces the sandbox_mode and sandbox_workspace_write settings
// (`-s`, --add-dir): Codex uses one or the other, never both, and the
// older settings win when they are given, so a command line or thread
// that carries a profile must carry none of them.
type Permissions struct {
	// Extends is the built-in profile the rules are laid over:
	// ExtendsWorkspace (also when empty) or ExtendsReadOnly.
	Extends string `json:"extends,omitempty"`
	// Write are absolute paths the agent's commands may write.
	Write []string `json:"write,omitempty"`
	// Read are absolute paths they may read, though inside a Deny path.
	Read []string `json:"read,omitempty"`
	// Deny are absolute paths they may not read, list, write, nor
	// connect to a unix socket below (Codex enforces it with an empty
	// mount over the path, so a socket there cannot be reached even with
	// the network on).
	Deny []string `json:"deny,omitempty"`
	// ReadOnlySlashTmp and ReadOnlyTmpdir keep /tmp and $TMPDIR from
	// being writable (sandbox_workspace_write.exclude_slash_tmp and
	// exclude_tmpdir_env_var). Over :read-only they are so already and
	// the switches add no rule.
	ReadOnlySlashTmp, ReadOnlyTmpdir bool `json:"-"`
	// Network lets the commands reach the network. With it on, unix
	// sockets may be connected to wherever the filesystem rules let them
	// be read; without it no socket at all is allowed.
	Network bool `json:"network,omitempty"`
	// HideEnv are environment variables the commands do not get
	// (shell_environment_policy.exclude).
	HideEnv []string `json:"hide_env,omitempty"`
}

// permissionsWire is Permissions as JSON (the shim's --permissions flag):
// the two temporary-directory switches named.
type permissionsWire struct {
	Permissions
	ReadOnlySlashTmp bool `json:"read_only_slash_tmp,omitempty"`
	ReadOnlyTmpdir   bool `json:"read_only_tmpdir,omitempty"`
}

// Validate reports a rule Codex would not take: the base must be one of
// the Extends constants (or empty), every path must be absolute, clean
// and valid UTF-8, and no variable name may be empty or hold '=' or a
// quote.
func (p Permissions) Validate() error { return p.validate(false) }

// ValidateThere is Validate for a profile on its way to another host,
// which completes it there (hosts.PermissionsHere): a path may also be
// "~" or begin with "~/", the home directory of the user there, expanded
// there before the profile is used — and then Validate must hold.
func (p Permissions) ValidateThere() error { return p.validate(true) }

func (p Permissions) validate(there bool) error {
	switch p.Extends {
	case "", ExtendsWorkspace, ExtendsReadOnly:
	default:
		return fmt.Errorf("codex: permission profile extends %q: want %s or %s", p.Extends, ExtendsWorkspace, ExtendsReadOnly)
	}
	for _, l := range [][]string{p.Write, p.Read, p.Deny} {
		for _, d := range l {
			abs := d
			if rest, ok := strings.CutPrefix(d, "~/"); there && (ok || d == "~") {
				abs = "/" + rest
			}
			if !filepath.IsAbs(abs) || filepath.Clean(abs) != abs || !utf8.ValidString(d) || strings.ContainsAny(d, "\x00\n\r") {
				if there {
					return fmt.Errorf("codex: permission path %q is neither a clean absolute path of valid UTF-8 nor one under ~/", d)
				}
				return fmt.Errorf("codex: permission path %q is not a clean absolute path of valid UTF-8", d)
			}
		}
	}
	for _, v := range p.HideEnv {
		if v == "" || strings.ContainsAny(v, "=\"\\\x00\n\r") {
			return fmt.Errorf("codex: hidden environment variable %q is not a variable name", v)
		}
	}
	return nil
}

// Filesystem returns the profile's filesystem rules, path → access. A
// path named in several lists takes the widest access: Write over Read
// over Deny. A Deny path that lies inside another with no Write or Read
// path between them is left out: it is denied already, and Codex fails
// to start a command when one denied path lies inside another ("Can't
// mkdir …: Read-only file system"). Pure.
func (p Permissions) Filesystem() map[string]string {
	fs := map[string]string{}
	for _, d := range p.Deny {
		if !deniedAbove(d, p) {
			fs[d] = AccessNone
		}
	}
	for _, d := range p.Read {
		if fs[d] != AccessWrite {
			fs[d] = AccessRead
		}
	}
	for _, d := range p.Write {
		fs[d] = AccessWrite
	}
	if p.ReadOnlySlashTmp && !p.readOnly() {
		fs[SlashTmp] = AccessRead
	}
	if p.ReadOnlyTmpdir && !p.readOnly() {
		fs[Tmpdir] = AccessRead
	}
	return fs
}

// Base returns the built-in profile p extends: Extends, ExtendsWorkspace
// when that is empty.
func (p Permissions) Base() string {
	if p.Extends == "" {
		return ExtendsWorkspace
	}
	return p.Extends
}

// readOnly reports whether p extends :read-only.
func (p Permissions) readOnly() bool { return p.Base() == ExtendsReadOnly }

// deniedAbove reports whether path d lies strictly inside a Deny path of
// p with no Write or Read path of p between that one and d (d itself
// included).
func deniedAbove(d string, p Permissions) bool {
	for dir := filepath.Dir(d); ; dir = filepath.Dir(dir) {
		if slices.Contains(p.Write, dir) || slices.Contains(p.Read, dir) {
			return false
		}
		if slices.Contains(p.Deny, dir) {
			return !slices.Contains(p.Write, d) && !slices.Contains(p.Read, d)
		}
		if dir == filepath.Dir(dir) {
			return false
		}
	}
}

// WithoutMissing returns p with the Deny paths that do not exist (lstat
// says so) left out. Codex makes a placeholder at a denied path that is
// missing, in the real filesystem when its parent is writable, and
// removes it only when the command ends: a missing /tmp/tmux-<uid> then
// turns into a file that breaks tmux for as long as a command runs, or
// for good if Codex is killed. What is missing holds no socket and
// nothing to read; the directories that must be denied before they exist
// (tmux's, ssh's) are made first by whoever builds the profile. It reads
// the filesystem; p is not changed.
func (p Permissions) WithoutMissing() Permissions {
	kept := make([]string, 0, len(p.Deny))
	for _, d := range p.Deny {
		if _, err := os.Lstat(d); err == nil {
			kept = append(kept, d)
		}
	}
	p.Deny = kept
	return p
}

// ConfigOverrides returns the profile as config overrides (key=value, the
// value TOML), for `-c` on codex's command line: the profile selected
// (default_permissions), its table (the base it extends, the filesystem
// rules, the network), and the hidden variables. Pure.
func (p Permissions) ConfigOverrides() []string {
	fs := p.Filesystem()
	keys := slices.Sorted(maps.Keys(fs))
	rules := make([]string, len(keys))
	for i, k := range keys {
		rules[i] = TOMLString(k) + "=" + TOMLString(fs[k])
	}
	kv := []string{
		"default_permissions=" + TOMLString(ProfileName),
		fmt.Sprintf("permissions.%s={extends=%s,filesystem={%s},network={enabled=%t}}",
			ProfileName, TOMLString(p.Base()), strings.Join(rules, ","), p.Network),
	}
	if len(p.HideEnv) > 0 {
		names := make([]string, len(p.HideEnv))
		for i, v := range p.HideEnv {
			names[i] = TOMLString(v)
		}
		kv = append(kv, "shell_environment_policy.exclude=["+strings.Join(names, ",")+"]")
	}
	return kv
}

// ThreadConfig returns the profile as the config of an app-server thread
// (thread/start and thread/resume params' config, keyed by dotted path):
// the same settings ConfigOverrides gives a command line. Pure.
func (p Permissions) ThreadConfig() map[string]any {
	fs := map[string]any{}
	for k, v := range p.Filesystem() {
		fs[k] = v
	}
	cfg := map[string]any{
		"default_permissions": ProfileName,
		"permissions." + ProfileName: map[string]any{
			"extends": p.Base(), "filesystem": fs, "network": map[string]any{"enabled": p.Network},
		},
	}
	if len(p.HideEnv) > 0 {
		cfg["shell_environment_policy.exclude"] = slices.Clone(p.HideEnv)
	}
	return cfg
}

// EncodePermissions renders p for the shim's command line; "" for nil.
func EncodePermissions(p *Permissions) string {
	if p == nil {
		return ""
	}
	b, err := json.Marshal(permissionsWire{Permissions: *p, ReadOnlySlashTmp: p.ReadOnlySlashTmp, ReadOnlyTmpdir: p.ReadOnlyTmpdir})
	if err != nil {
		return "" // cannot happen: strings and booleans only
	}
	return string(b)
}

// DecodePermissions reads back what EncodePermissions wrote; nil for "".
// Its paths may be under "~/" (ValidateThere): the profile of a shim on
// another host, which expands them there; whoever runs Codex with the
// profile validates it (Validate, in codex.ExecOptions.Validate).
func DecodePermissions(s string) (*Permissions, error) {
	if s == "" {
		return nil, nil
	}
	var w permissionsWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return nil, fmt.Errorf("codex: permissions: %w", err)
	}
	p := w.Permissions
	p.ReadOnlySlashTmp, p.ReadOnlyTmpdir = w.ReadOnlySlashTmp, w.ReadOnlyTmpdir
	if err := p.ValidateThere(); err != nil {
		return nil, err
	}
	return &p, nil
}

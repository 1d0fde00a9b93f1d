package team

import (
	"slices"
	"strings"
	"testing"
)

func TestParseAllowSockets(t *testing.T) {
	cfg, msg, _ := loadString(t, "name: t\ncodex:\n  allow_sockets: [ssh-agent]\nroles:\n  - name: a\n  - name: b\n    codex: {allow_sockets: [docker, session-bus]}\n")
	if cfg == nil {
		t.Fatal(msg)
	}
	if got := cfg.Agents()[0].Codex.AllowSockets; !slices.Equal(got, []string{SocketSSHAgent}) {
		t.Errorf("a: %q", got)
	}
	if got := cfg.Agents()[1].Codex.AllowSockets; !slices.Equal(got, []string{SocketDocker, SocketSessionBus}) {
		t.Errorf("b: %q", got)
	}
}

func TestParseOwnPermissionProfileRefused(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"codex:\n  allow_sockets: [ssh]", `team.yaml:3:19: invalid codex.allow_sockets element "ssh"`},
		{"codex:\n  allow_sockets: ssh-agent", "team.yaml:3:18: codex.allow_sockets must be a list"},
		{"codex:\n  config: {default_permissions: mine}", "team.yaml:3:12: codex.config.default_permissions: a permission profile of your own would replace batty's and is refused"},
		{"codex:\n  config: {permissions.mine.network.enabled: true}", "team.yaml:3:12: codex.config.permissions.mine.network.enabled: a permission profile"},
		{"codex:\n  args: [-c, 'default_permissions=\"mine\"']", "team.yaml:3:10: codex.args: a permission profile of your own (default_permissions)"},
		{"codex:\n  args: ['--config=permissions.mine.extends=\":workspace\"']", "team.yaml:3:10: codex.args: a permission profile of your own (permissions.mine.extends)"},
	} {
		_, msg, _ := loadString(t, "name: t\n"+tc.src+"\nroles:\n  - name: a\n")
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s:\n got %q\nwant it to contain %q", tc.src, msg, tc.want)
		}
	}
}

func TestParseReadOnlyWorktreeRefused(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"roles:\n  - name: a\n    workspace: worktree\n    codex: {sandbox: read-only}\n", "team.yaml:4:16: a read-only role cannot have a worktree"},
		{"codex: {sandbox: read-only}\nroles:\n  - name: a\n    workspace: worktree\n", "team.yaml:5:16: a read-only role cannot have a worktree"},
		{"roles:\n  - name: a\n    codex: {sandbox: read-only}\n  - name: b\n    workspace: worktree\n", ""},
	} {
		cfg, msg, _ := loadString(t, "name: t\n"+tc.src)
		switch {
		case tc.want == "" && cfg == nil:
			t.Errorf("%s: refused: %s", tc.src, msg)
		case tc.want != "" && !strings.Contains(msg, tc.want):
			t.Errorf("%s:\n got %q\nwant it to contain %q", tc.src, msg, tc.want)
		}
	}
}

// The sandbox settings a role's permission profile could not be made of
// are refused at load, at the role's codex section or the role, not when
// each agent starts; danger-full-access gets no profile and keeps them.
func TestParseSandboxSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"roles:\n  - name: a\n    codex: {config: {sandbox_mode: danger-full-access}}\n", "team.yaml:4:5: role a: codex.config sandbox_mode sets a sandbox mode"},
		{"codex: {args: [--yolo]}\nroles:\n  - name: a\n", "team.yaml:4:5: role a: codex.args \"--yolo\" sets a sandbox mode"},
		{"roles:\n  - name: a\n    codex: {args: [-c, 'sandbox_workspace_write.writable_roots=[\"rel/dir\"]']}\n", `team.yaml:4:5: role a: sandbox_workspace_write.writable_roots "rel/dir" is not an absolute path`},
		{"roles:\n  - name: a\n    codex: {config: {sandbox_workspace_write.network_access: \"yes\"}}\n", "team.yaml:4:5: role a's codex settings:"},
		{"roles:\n  - name: a\n    codex: {sandbox: read-only, args: [-s, workspace-write]}\n", "team.yaml:4:5: role a: codex.args"},
		{"roles:\n  - name: a\n    codex: {sandbox: danger-full-access, args: [--yolo]}\n", ""},
		{"roles:\n  - name: a\n    codex: {config: {sandbox_workspace_write.network_access: true}, args: [-c, 'sandbox_workspace_write.writable_roots=[\"/data\"]']}\n", ""},
	} {
		cfg, msg, _ := loadString(t, "name: t\n"+tc.src)
		switch {
		case tc.want == "" && cfg == nil:
			t.Errorf("%s: refused: %s", tc.src, msg)
		case tc.want != "" && !strings.Contains(msg, tc.want):
			t.Errorf("%s:\n got %q\nwant it to contain %q", tc.src, msg, tc.want)
		}
	}
}

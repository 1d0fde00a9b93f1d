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

package hosts

import (
	"maps"
	"slices"
	"testing"

	"github.com/battyhq/batty/codex"
)

// A profile the daemon made for an agent on a host is completed there:
// "~" expanded, the host's tmux and ssh socket directories denied; with
// the network on the user's sockets there denied and their variables
// hidden, but those allowed; without a home a "~/" path is refused; nil
// stays nil; the daemon's profile is not changed.
func TestPermissionsHere(t *testing.T) {
	daemon := func(network bool) *codex.Permissions {
		return &codex.Permissions{Write: []string{"~/src/p", "~/.local/state/batty/projects/p-1/outboxes/eng", "/opt/cache"},
			Deny: []string{"~/.local/state/batty/projects/p-1"}, Network: network}
	}
	env := []string{"HOME=/home/bob", "XDG_RUNTIME_DIR=/run/user/1001", "SSH_AUTH_SOCK=/tmp/ssh-y/agent.9", "TMUX_TMPDIR=/var/tmux"}
	closed := map[string]string{"/home/bob/src/p": "write", "/home/bob/.local/state/batty/projects/p-1/outboxes/eng": "write", "/opt/cache": "write",
		"/home/bob/.local/state/batty/projects/p-1": "none", "/run/user/1001/batty-ssh": "none", "/var/tmux/tmux-1001": "none", "/tmp/tmux-1001": "none"}
	open := maps.Clone(closed)
	delete(open, "/run/user/1001/batty-ssh") // inside the runtime directory, denied whole
	maps.Copy(open, map[string]string{"/run/user/1001": "none", "/tmp/ssh-y": "none", "/home/bob/.gnupg": "none", "/var/run/docker.sock": "none", "/run/docker.sock": "none"})
	sshBack := maps.Clone(open)
	sshBack["/tmp/ssh-y"] = "read"
	for _, tc := range []struct {
		name    string
		p       *codex.Permissions
		allow   []string
		home    string
		fs      map[string]string
		hidden  []string
		wantErr bool
	}{
		{name: "nil stays nil"},
		{name: "network off", p: daemon(false), home: "/home/bob", fs: closed},
		{name: "network on", p: daemon(true), home: "/home/bob", fs: open, hidden: []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO", "SSH_AUTH_SOCK"}},
		{name: "ssh-agent allowed", p: daemon(true), allow: []string{codex.SocketSSHAgent}, home: "/home/bob", fs: sshBack, hidden: []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO"}},
		{name: "no home", p: daemon(false), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before string
			if tc.p != nil {
				before = codex.EncodePermissions(tc.p)
			}
			got, err := PermissionsHere(tc.p, tc.allow, tc.home, env, 1001)
			switch {
			case tc.wantErr:
				if err == nil {
					t.Fatalf("PermissionsHere = %+v, want an error", got)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tc.p == nil:
				if got != nil {
					t.Fatalf("PermissionsHere(nil) = %+v", got)
				}
				return
			}
			if fs := got.Filesystem(); !maps.Equal(fs, tc.fs) {
				t.Fatalf("filesystem %v\nwant %v", fs, tc.fs)
			}
			if !slices.Equal(got.HideEnv, tc.hidden) || got.Network != tc.p.Network {
				t.Fatalf("hidden %v network %t", got.HideEnv, got.Network)
			}
			if codex.EncodePermissions(tc.p) != before {
				t.Fatalf("the daemon's profile changed: %s", codex.EncodePermissions(tc.p))
			}
		})
	}
}

// SocketDirs: ssh's control directory and tmux's socket directories of
// the environment given.
func TestSocketDirs(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want []string
	}{
		{[]string{"HOME=/home/a"}, []string{"/home/a/.ssh/batty", "/tmp/tmux-7"}},
		{[]string{"HOME=/home/a", "XDG_RUNTIME_DIR=/run/user/7", "TMUX_TMPDIR=/var/t"}, []string{"/run/user/7/batty-ssh", "/var/t/tmux-7", "/tmp/tmux-7"}},
		{[]string{"TMUX_TMPDIR=/tmp"}, []string{"/tmp/tmux-7"}},
	} {
		if got := SocketDirs(tc.env, 7); !slices.Equal(got, tc.want) {
			t.Errorf("SocketDirs(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

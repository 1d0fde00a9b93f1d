package project

import "testing"

func TestStateDirOf(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/p/team.yaml", ""},
		{"/p/sub/team.yaml", ""},
		{"/p/.batty/team.yaml", ""}, // the project's own team file in its state directory
		{"/p/.batty/worktrees/engineer-1/team.yaml", "/p/.batty"},
		{"/p/.batty/worktrees/engineer-1/.batty/team.yaml", "/p/.batty"},
		{"/p/.batty/worktrees/engineer-1/sub/team.yaml", "/p/.batty"},
		{"/p/.batty/worktrees/team.yaml", "/p/.batty"},
		{"/p/.batty/.batty/team.yaml", "/p/.batty"},
		{"/p/.batty/worktrees/engineer-1/../../team.yaml", ""}, // /p/.batty/team.yaml
		{"/p/.batty/worktrees/x/../engineer-1/team.yaml", "/p/.batty"},
		{"/p/x/../.batty/worktrees/a/team.yaml", "/p/.batty"},
		{"/.batty/worktrees/a/team.yaml", "/.batty"},
		{"/p/.batty-old/team.yaml", ""},
		{"/p/my.batty/worktrees/a/team.yaml", ""},
		{"/p//.batty/./worktrees/a/team.yaml", "/p/.batty"},
	} {
		if got := StateDirOf(tc.path); got != tc.want {
			t.Errorf("StateDirOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestStateDirIn(t *testing.T) {
	homes := []string{"/s/batty", "", "rel", "/home/u/.local/state/batty"}
	for _, tc := range []struct{ path, want string }{
		{"/s/batty/projects/app-1/worktrees/eng/team.yaml", "/s/batty/projects/app-1"},
		{"/s/batty/projects/app-1/worktrees/eng/sub/.batty/team.yaml", "/s/batty/projects/app-1"},
		{"/s/batty/projects/team.yaml", "/s/batty"},
		{"/s/batty/team.yaml", "/s/batty"},
		{"/home/u/.local/state/batty/projects/p-2/worktrees/a/team.yaml", "/home/u/.local/state/batty/projects/p-2"},
		{"/s/batty/projects/app-1/worktrees/../../../../p/team.yaml", ""},
		{"/s/batty-old/team.yaml", ""},
		{"/src/app/team.yaml", ""},
		{"/rel/team.yaml", ""},
	} {
		if got := StateDirIn(tc.path, homes); got != tc.want {
			t.Errorf("StateDirIn(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

package hosts

import (
	"path"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/shim/shimconfig"
)

// On a host, an agent that works in the project there (no worktree: its
// writable root is its working directory in the project directory there)
// cannot reach the clones of the worktree agents there: each clone (the
// worktree agent's working directory there) and the clone repository lie
// in the project's state directory there, outside the project directory.
// Only a project directory holding the state home (the home directory)
// would put them inside, and `batty clone-host` refuses that
// (clones.Serve).
func TestClonesThereOutOfTheSharedCheckout(t *testing.T) {
	const home, root = "/home/me", "/work/p"
	l := project.LayoutIn(home+"/.local/state/batty", root)
	env := []string{agentenv.Dir + "=" + l.Dir}
	for _, tc := range []struct {
		hostDir, thereHome string
		inside             bool
	}{
		{"~/src/p", "/home/u", false},
		{"/srv/p", "/home/u", false},
		{"/home/u/p", "/home/u", false},
		{"~/.local", "/home/u", true},
		{"~", "/home/u", true},
	} {
		shared := ShimConfig(shimconfig.Config{Agent: "arch", Cwd: root, Env: env}, tc.hostDir, root, home)
		worktree := ShimConfig(shimconfig.Config{Agent: "eng", Cwd: path.Join(l.WorktreesDir(), "eng"), Env: env}, tc.hostDir, root, home)
		writable := ExpandHome(shared.Cwd, tc.thereHome)
		if writable != ExpandHome(tc.hostDir, tc.thereHome) {
			t.Fatalf("%s: the shared agent works in %s, not in the project there", tc.hostDir, shared.Cwd)
		}
		if want := path.Join(WorktreesThere(tc.hostDir), "eng"); worktree.Cwd != want {
			t.Fatalf("%s: the worktree agent works in %s, not in its clone %s", tc.hostDir, worktree.Cwd, want)
		}
		for _, p := range []string{worktree.Cwd, project.Layout{Dir: StateDir(tc.hostDir)}.CloneRepo()} {
			if got := InProject(writable, ExpandHome(p, tc.thereHome)); got != tc.inside {
				t.Errorf("%s: %s inside the shared agent's writable root %s: %v, want %v", tc.hostDir, p, writable, got, tc.inside)
			}
		}
	}
}

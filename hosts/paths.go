package hosts

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/sandbox"
)

// Bounds of the work done on a host.
const (
	// ShimHandshakeTimeout bounds the handshake of a shim started on a
	// host (shimclient.SpawnOptions.HandshakeTimeout): the connection counts.
	ShimHandshakeTimeout = 60 * time.Second
	// InstallTimeout bounds one installation of batty on a host
	// (EnsureBatty: the probes and the upload).
	InstallTimeout = 2 * time.Minute
	// CloseTimeout bounds the end of a host's shared connections.
	CloseTimeout = 10 * time.Second
)

// HomePath is local, a path here, as a host sees it: a path under home
// (the home directory here) becomes the same path under the home
// directory there ("~/…", which RemotePath and the shim expand); any
// other path is left as it is. It is a pure function.
func HomePath(local, home string) string {
	if home == "" || home == "/" || !filepath.IsAbs(local) {
		return local
	}
	if local == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(local, strings.TrimSuffix(home, "/")+"/"); ok {
		return "~/" + rest
	}
	return local
}

// ProjectPath is the path on a host of local, a path here under the
// project: hostDir (the project there, team.Host.ProjectDir) joined with
// local's path relative to root (the project here). A path outside the
// project maps to hostDir: the host has the project directory only. It
// is a pure function.
func ProjectPath(hostDir, root, local string) string {
	rel, err := filepath.Rel(root, local)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return hostDir
	}
	return path.Join(hostDir, filepath.ToSlash(rel))
}

// InProject reports whether local, a path here, lies inside root, the
// project here (ProjectPath maps it to the same place there). Pure.
func InProject(root, local string) bool {
	return project.Inside(root, local)
}

// TargetThere is t, how an agent runs codex here, as a host whose project
// directory is hostDir sees it: the binary and CODEX_HOME under the home
// directory here (home) are the same paths under the home there
// (HomePath), the working directory is the agent's there (ProjectPath,
// root the project here). Pure.
func TargetThere(t preflight.Target, hostDir, root, home string) preflight.Target {
	t.Bin = HomePath(t.Bin, home)
	t.Home = HomePath(t.Home, home)
	t.Cwd = ProjectPath(hostDir, root, t.Cwd)
	return t
}

// SandboxThere is p, how the team's setup runs in Codex's sandbox here,
// as a host sees it: the codex binary and the writable directories under
// the home directory here (home) are the same paths under the home there
// (HomePath, "~/" which the host expands: SandboxHere); Homes is left for
// the host to choose; the variables hidden stay hidden; the denied
// directories, paths of this machine, are left for the host to name (its
// state directory, its sockets). nil (workspace.sandbox: off) stays nil.
// Pure; p is not changed.
func SandboxThere(p *sandbox.Policy, home string) *sandbox.Policy {
	if p == nil {
		return nil
	}
	there := &sandbox.Policy{Bin: HomePath(p.Bin, home), Network: p.Network, HideEnv: slices.Clone(p.HideEnv)}
	for _, w := range p.Writable {
		there.Writable = append(there.Writable, HomePath(w, home))
	}
	return there
}

// SandboxHere is p, a policy SandboxThere made, on the host that runs it:
// "~" expanded to home, each run's CODEX_HOME under homes, the variables
// hidden kept, no directory denied (the caller names the host's). nil
// stays nil. Pure; p is not changed.
func SandboxHere(p *sandbox.Policy, home, homes string) *sandbox.Policy {
	if p == nil {
		return nil
	}
	here := &sandbox.Policy{Bin: ExpandHome(p.Bin, home), Homes: homes, Network: p.Network, HideEnv: slices.Clone(p.HideEnv)}
	for _, w := range p.Writable {
		here.Writable = append(here.Writable, ExpandHome(w, home))
	}
	return here
}

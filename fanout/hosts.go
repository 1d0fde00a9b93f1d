package fanout

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// WorkerHost is where some of a job's workers run: this machine, or a
// host of the team file with batty installed and its Codex checked
// (HostSetup.Prepare).
type WorkerHost struct {
	// Name is the host's name in the team file; "" is this machine.
	Name string
	// Remote starts a shim there (hosts.Transport.ShimCommand in the
	// workers' directory there); nil on this machine.
	Remote func(argv []string) (*exec.Cmd, error)
	// Batty is the batty installed there (hosts.EnsureBatty's path).
	Batty string
	// Config is the workers' configuration as the host sees it
	// (RemoteConfig).
	Config shimconfig.Config
}

// HostFor is the index in a list of count hosts of the host worker n
// (1-based) runs on: the hosts taken round robin by worker number, as a
// role's instances are. It is a pure function; count must be positive.
func HostFor(n, count int) int {
	return (max(n, 1) - 1) % count
}

// RemoteConfig is c, the workers' configuration here, for their shims on
// a host whose project directory is hostDir: the working directory
// (cwd, the workers' directory here when c.Cwd is "") and the added
// directories at the same place under the project there, the output
// schema too (it must lie inside the project: see hosts.InProject);
// codex's binary and CODEX_HOME under the home directory there when they
// lie under home here. root is the project here. It is a pure function.
func RemoteConfig(c shimconfig.Config, root, hostDir, cwd, home string) shimconfig.Config {
	if c.Cwd == "" {
		c.Cwd = cwd
	}
	return hosts.ShimConfig(c, hostDir, root, home)
}

// preflightTarget is how a shim of configuration c runs codex, for the
// check of its Codex (package preflight). Pure.
func preflightTarget(c shimconfig.Config) preflight.Target {
	t := preflight.Target{Bin: c.CodexBin, Cwd: c.Cwd, Args: c.Exec.ExtraArgs}
	for _, e := range c.Env {
		k, v, _ := strings.Cut(e, "=")
		if k == "CODEX_HOME" {
			t.Home = v
			continue
		}
		t.Env = append(t.Env, e)
	}
	for _, kv := range c.Exec.Config {
		k, v, _ := strings.Cut(kv, "=")
		if t.Config == nil {
			t.Config = map[string]string{}
		}
		t.Config[k] = v
	}
	return t
}

// HostProblem is why a host cannot run workers.
type HostProblem struct {
	Host    string
	Problem *preflight.Problem
}

// HostSetup readies the team's hosts for a job's workers.
type HostSetup struct {
	// Transport reaches the hosts.
	Transport *hosts.Transport
	// Batty is the batty installed on them (hosts.Self).
	Batty hosts.Binary
	// Root is the project directory here; Cwd the workers' directory here
	// when Config.Cwd is ""; Home the home directory here.
	Root, Cwd, Home string
	// Config is the workers' configuration here.
	Config shimconfig.Config
	// CheckTimeout bounds each codex run of a host's check (0:
	// preflight.DefaultTimeout).
	CheckTimeout time.Duration
}

// Prepare readies list for workers, in parallel: on each host (a zero
// team.Host is this machine, which it leaves as it is) it installs batty
// (hosts.EnsureBatty) and runs the check of its Codex (hosts.Preflight)
// with the workers' configuration as the host sees it. It returns the
// hosts ready, in list's order, and the problems of the others, each with
// its fix. It blocks for the installations and checks; ctx cuts them
// short (a host whose work was cut is a problem).
func (s HostSetup) Prepare(ctx context.Context, list []team.Host) ([]WorkerHost, []HostProblem) {
	ready := make([]*WorkerHost, len(list))
	probs := make([]*preflight.Problem, len(list))
	var wg sync.WaitGroup
	for i, h := range list {
		if h.Name == "" {
			ready[i] = &WorkerHost{Config: s.Config}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready[i], probs[i] = s.prepare(ctx, h)
		}()
	}
	wg.Wait()
	var out []WorkerHost
	var bad []HostProblem
	for i, h := range list {
		if probs[i] != nil {
			bad = append(bad, HostProblem{Host: h.Name, Problem: probs[i]})
			continue
		}
		out = append(out, *ready[i])
	}
	return out, bad
}

// prepare installs batty on h and checks its Codex.
func (s HostSetup) prepare(ctx context.Context, h team.Host) (*WorkerHost, *preflight.Problem) {
	cfg := RemoteConfig(s.Config, s.Root, h.ProjectDir(s.Root), s.Cwd, s.Home)
	ictx, cancel := context.WithTimeout(ctx, hosts.InstallTimeout)
	batty, err := hosts.EnsureBatty(ictx, s.Transport, h, s.Batty)
	cancel()
	if err != nil {
		return nil, hosts.Unreachable(h, err, "")
	}
	cctx, cancel := context.WithTimeout(ctx, hosts.PreflightLimit(s.CheckTimeout))
	defer cancel()
	p, err := hosts.Preflight(cctx, s.Transport, h, batty, preflightTarget(cfg))
	if err != nil {
		return nil, hosts.Unreachable(h, err, "")
	}
	if p != nil {
		return nil, p
	}
	return &WorkerHost{Name: h.Name, Remote: s.Transport.ShimCommand(h, cfg.Cwd), Batty: batty, Config: cfg}, nil
}

// Close ends the shared connection to each host of list (after its
// workers have stopped), in parallel; this machine and hosts reached
// through a command have none. It blocks until ssh has answered for each
// (at most 10 s).
func (s HostSetup) Close(list []team.Host) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, h := range list {
		if h.Name == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), hosts.CloseTimeout)
			defer cancel()
			errs[i] = s.Transport.Close(ctx, h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

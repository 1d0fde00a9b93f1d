package fanout

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// WorkerHost is where some of a job's workers run: this machine, or a
// host of the team file with batty installed and its Codex checked
// (HostSetup.Prepare).
type WorkerHost struct {
	// Host is where the workers' shims start (host.Local: this machine).
	Host host.Host
	// Config is the workers' configuration as the host sees it
	// (Host.ShimConfig).
	Config shimconfig.Config
}

// Name is the host's name in the team file; "" is this machine.
func (w WorkerHost) Name() string { return w.Host.Name() }

// HostFor is the index in a list of count hosts of the host worker n
// (1-based) runs on: the hosts taken round robin by worker number, as a
// role's instances are. It is a pure function; count must be positive.
func HostFor(n, count int) int {
	return (max(n, 1) - 1) % count
}

// hostConfig is c, the workers' configuration here, for their shims on
// h: the working directory (cwd, the workers' directory here, when c.Cwd
// is "") and the rest as the host sees them (Host.ShimConfig: on a host,
// the project's paths under the project there, which the output schema
// must lie in, see hosts.InProject; codex's binary and CODEX_HOME under
// the home there). Pure.
func hostConfig(h host.Host, c shimconfig.Config, cwd string) shimconfig.Config {
	if c.Cwd == "" {
		c.Cwd = cwd
	}
	return h.ShimConfig(c)
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
// team.Host is this machine, whose Codex the job checks as it starts a
// worker) it installs batty and runs the check of its Codex (Host.Check)
// with the workers' configuration as the host sees it. It returns the
// hosts ready, in list's order, and the problems of the others, each with
// its fix. It blocks for the installations and checks; ctx cuts them
// short (a host whose work was cut is a problem).
func (s HostSetup) Prepare(ctx context.Context, list []team.Host) ([]WorkerHost, []HostProblem) {
	ready := make([]*WorkerHost, len(list))
	probs := make([]*preflight.Problem, len(list))
	var wg sync.WaitGroup
	for i, h := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready[i], probs[i] = s.prepare(ctx, s.on(h))
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

// on is h as the job reaches it (host.On): this machine as it is, a
// host through s's transport with s's batty.
func (s HostSetup) on(h team.Host) host.Host {
	return host.On(h, host.Local{}, host.Remote{Transport: s.Transport, Root: s.Root, Home: s.Home, Binary: s.Batty, CheckTimeout: s.CheckTimeout})
}

// prepare is h ready for the job's workers: their configuration as h
// sees it, and h's precheck (on a host, batty installed there and its
// Codex checked; this machine as it is: a worker that cannot start here
// fails as without --hosts).
func (s HostSetup) prepare(ctx context.Context, h host.Host) (*WorkerHost, *preflight.Problem) {
	w := &WorkerHost{Host: h, Config: hostConfig(h, s.Config, s.Cwd)}
	if p := h.Precheck(ctx, preflightTarget(w.Config)); p != nil {
		return nil, p
	}
	return w, nil
}

// Close ends the shared connection to each host of list (after its
// workers have stopped), in parallel; this machine and hosts reached
// through a command have none. It blocks until ssh has answered for each
// (at most 10 s).
func (s HostSetup) Close(list []team.Host) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, h := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), hosts.CloseTimeout)
			defer cancel()
			errs[i] = s.on(h).Close(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

package orchestrator

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/team"
)

// remoteHost is one of the team's hosts that agents run on. installed
// and its error are safe from any goroutine; the rest is fixed by
// initHosts.
type remoteHost struct {
	d    *Daemon
	host team.Host
	// dir is the project directory there (Host.ProjectDir): "~/" is the
	// home directory of the user there.
	dir string
	// remote is the host behind the one Host interface: its installation
	// of batty is ensure, its clones the agents' workspaces there.
	remote *host.Remote

	mu         sync.Mutex // serializes installations; guards batty and installErr
	batty      string     // the installed batty (EnsureBatty's path), "" while not installed
	installErr error      // why the last installation failed

	reach     sync.Mutex  // serializes probes; guards downSince and the changes of down
	down      atomic.Bool // the last probe failed, and no shim started there since (read without reach)
	downSince time.Time
}

// hostProbeTimeout bounds the probe of a host that a shim could not reach.
const hostProbeTimeout = 15 * time.Second

// initHosts gives every agent on another host its remoteHost, one per
// host, in d.hosts (file order); the others stay here.
func (d *Daemon) initHosts() {
	byName := map[string]reach{"": here{local: d.localHost}}
	for _, a := range d.agents {
		h, err := host.For(d.cfg, a.def)
		if err != nil {
			// The parser allows no such agent; keep it here rather
			// than crash.
			d.log.Error("Agent names an unknown host; running it here", "agent", a.def.Name, "error", err)
			continue
		}
		r, ok := byName[h.Name]
		if !ok {
			rh := d.newRemoteHost(h)
			d.hosts = append(d.hosts, rh)
			r = rh
			byName[h.Name] = r
		}
		a.host = r
	}
}

// newRemoteHost is host h as the daemon reaches it: through its
// transport, batty installed there by ensure (with the roster), a clone
// kept where an earlier batty kept it named in the log.
func (d *Daemon) newRemoteHost(h team.Host) *remoteHost {
	r := &remoteHost{d: d, host: h, dir: h.ProjectDir(d.layout.Root())}
	r.remote = &host.Remote{Transport: d.opts.Transport, Host: h, Root: d.layout.Root(), Home: localHome(),
		Batty: r.ensure, Installed: r.installed, CheckTimeout: d.opts.CheckTimeout,
		MinFree: d.opts.WorktreeMinFree, GitTimeout: gitTimeout,
		OldClone: func(agent, old, where string) {
			d.log.Warn(oldCloneNotice(agent, h.Name, old, where), "agent", agent, "host", h.Name, "old_clone", old)
		}}
	return r
}

// localHost is this machine: Codex's check runs with the environment a
// shim gives it, the shims' own with the agent's over it, marked as the
// project's (see sweep.go).
func (d *Daemon) localHost() host.Local {
	return host.Local{Checker: &preflight.Checker{Reaper: d.reaper, Timeout: d.opts.CheckTimeout, BaseEnv: d.opts.ShimEnv,
		FinalEnv: []string{reap.MarkEnv + "=" + d.layout.Dir}}}
}

// initMovedWorkspaces gives every worktree agent whose clone was on
// another host than the one it runs on now (its state's WorkspaceHost)
// that host as prevHost, added to d.hosts when no agent runs there now.
// A host the team file no longer names is left behind with a warning
// (its clone's work is not here). Before the agents run.
func (d *Daemon) initMovedWorkspaces() {
	byName := map[string]*remoteHost{}
	for _, r := range d.hosts {
		byName[r.host.Name] = r
	}
	for _, a := range d.agents {
		prev := a.st.WorkspaceHost
		if prev == "" || prev == a.def.Host || a.def.Workspace != team.WorkspaceWorktree {
			continue
		}
		h, ok := d.cfg.Host(prev)
		if !ok {
			d.log.Warn("The clone of a worktree agent is on a host the team file no longer names", "agent", a.def.Name, "host", prev)
			d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name,
				Detail: fmt.Sprintf("%s worked in a clone on host %s, which the team file no longer names: what was not committed and brought here is left there", a.def.Name, prev)})
			a.st.WorkspaceHost = ""
			continue
		}
		r, ok := byName[prev]
		if !ok {
			r = d.newRemoteHost(h)
			byName[prev] = r
			d.hosts = append(d.hosts, r)
		}
		a.prevHost = r
	}
}

// installHosts installs batty on every host, in parallel, and waits for
// them; a failure is logged and parks the host's agents at their first
// check (see health.check).
func (d *Daemon) installHosts(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range d.hosts {
		wg.Add(1)
		go func(r *remoteHost) { defer wg.Done(); r.ensure(ctx) }(r)
	}
	wg.Wait()
}

// ensure installs batty on the host unless it is installed already, and
// returns its path there. It blocks for the installation (at most
// hosts.InstallTimeout); concurrent calls wait for the first.
func (r *remoteHost) ensure(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batty != "" {
		return r.batty, nil
	}
	b := r.d.opts.HostBatty
	if b.Path == "" {
		r.installErr = fmt.Errorf("this daemon has no batty binary to install on host %s", r.host.Name)
		return "", r.installErr
	}
	r.d.log.Info("Installing batty on host", "host", r.host.Name, "at", b.RemoteBatty())
	ctx, cancel := context.WithTimeout(ctx, hosts.InstallTimeout)
	defer cancel()
	start := time.Now()
	p, err := hosts.EnsureBatty(ctx, r.d.opts.Transport, r.host, b)
	if err != nil {
		if r.installErr == nil || r.installErr.Error() != err.Error() {
			r.d.log.Error("Batty could not be installed on host", "host", r.host.Name, "error", err)
		}
		r.installErr = err
		return "", err
	}
	// `batty send` there reads the team's roster, not the project's team
	// file, which the host may not have.
	if err := r.putRoster(ctx); err != nil {
		if r.installErr == nil || r.installErr.Error() != err.Error() {
			r.d.log.Error("The team's roster could not be written on host", "host", r.host.Name, "error", err)
		}
		r.installErr = err
		return "", err
	}
	r.d.log.Info("Batty is ready on host", "host", r.host.Name, "path", p, "took", time.Since(start).Round(time.Millisecond))
	r.batty, r.installErr = p, nil
	return p, nil
}

// putRoster writes the team's roster (team.Roster) on the host, beside
// the project's state directory there (hosts.RosterThere: out of the
// agents' writable paths there, and readable where their permission
// profiles deny the state directory), where `batty send` run by the
// agents there finds it through agentenv.TeamFile. It blocks for the
// write.
func (r *remoteHost) putRoster(ctx context.Context) error {
	b, err := team.Roster(r.d.cfg)
	if err != nil {
		return err
	}
	return hosts.Put(ctx, r.d.opts.Transport, r.host, hosts.RosterThere(r.dir), b)
}

// on is the host as the one Host interface.
func (r *remoteHost) on() host.Host { return r.remote }

// ready reports whether batty is installed on the host.
func (r *remoteHost) ready() bool { return r.remote.Ready() }

// attach is w, a shim on the host, as a local one: its streamed
// transcript written here (remoteWorker).
func (r *remoteHost) attach(w Worker, transcript, root string, log hclog.Logger) Worker {
	return newRemoteWorker(w, transcript, root, log)
}

// installed is the path of batty on the host, "" while it is not
// installed.
func (r *remoteHost) installed() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batty
}

// closeHosts ends the shared connection of every host (after the last
// shim there has stopped), in parallel.
func (d *Daemon) closeHosts() {
	var wg sync.WaitGroup
	for _, r := range d.hosts {
		wg.Add(1)
		go func(r *remoteHost) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), hosts.CloseTimeout)
			defer cancel()
			if err := r.remote.Close(ctx); err != nil {
				d.log.Warn("Closing the connection to a host", "host", r.host.Name, "error", err)
			}
		}(r)
	}
	wg.Wait()
}

// localHome is the home directory here, "" when unknown.
func localHome() string {
	h, _ := os.UserHomeDir()
	return h
}

// probe runs `true` on the host (at most hostProbeTimeout) and records
// the answer: the first failure of an outage appends one host_unreachable
// event (an alert), naming agent, the first success after it one
// host_reachable. It reports whether the host answered. It blocks for the
// probe; safe from any goroutine.
func (r *remoteHost) probe(agent string) bool {
	r.reach.Lock()
	defer r.reach.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), hostProbeTimeout)
	defer cancel()
	err := r.remote.Probe(ctx)
	if err == nil {
		r.upLocked()
		return true
	}
	if !r.down.Load() {
		r.down.Store(true)
		r.downSince = time.Now()
		r.d.log.Error("Host unreachable: its agents wait", "host", r.host.Name, "error", err)
		r.d.events.Append(eventlog.Event{Type: eventlog.EvHostUnreachable, Agent: agent, Detail: err.Error(),
			Data: eventlog.Host{Host: r.host.Name}})
	}
	return false
}

// isDown reports whether the host's last probe failed and no shim has
// started there since.
func (r *remoteHost) isDown() bool { return r.down.Load() }

// reached records that the host answered: a shim started there.
func (r *remoteHost) reached() {
	r.reach.Lock()
	defer r.reach.Unlock()
	r.upLocked()
}

func (r *remoteHost) upLocked() {
	if !r.down.Load() {
		return
	}
	r.down.Store(false)
	d := time.Since(r.downSince).Round(time.Second)
	r.d.log.Info("Host reachable again", "host", r.host.Name, "after", d)
	r.d.events.Append(eventlog.Event{Type: eventlog.EvHostReachable, Detail: "after " + d.String(),
		Data: eventlog.Host{Host: r.host.Name}})
}

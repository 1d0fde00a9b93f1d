package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/codex/appshare"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// sharedServers are the daemon's shared app-servers (codex.app_server:
// per-account): one `codex app-server` per distinct way of running it
// here — the codex binary, the account (CODEX_HOME), the role's
// codex.env and the -c settings (sharedKey) — each behind a broker
// (package codex/appshare) whose socket the local shims of its agents get
// (shimconfig.Config.AppServerSocket). A broker starts with the first agent
// placed on it and ends with the daemon, after the last shim (close).
// Safe for concurrent use.
type sharedServers struct {
	d *Daemon

	mu      sync.Mutex
	servers map[string]*sharedServer // by sharedKey
	closed  bool
}

// sharedServer is one shared process's broker and who uses it.
type sharedServer struct {
	b       *appshare.Broker
	key     string // sharedKey
	account string // CODEX_HOME

	mu     sync.Mutex
	agents []string // the agents placed on it, sorted
}

// sharedKey names the shared process for a binary, an account, the role's
// codex.env (env, KEY=VALUE, sorted) and the process's -c settings
// (shimconfig.SharedServerArgs): agents whose four agree share one process. Pure.
func sharedKey(bin, home string, env, args []string) string {
	h := sha256.New()
	for _, part := range [][]string{{bin, home}, env, args} {
		for _, s := range part {
			h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// sharedWanted reports whether agent def, on host on, runs on a shared
// app-server: where the host shares the daemon's (host.Host.SharesAppServer;
// a host's agents run per-agent there). Pure.
func sharedWanted(def team.Agent, on host.Host) bool {
	return on.SharesAppServer() && def.Codex.Runtime == team.RuntimeAppServer && def.Codex.AppServer == team.AppServerPerAccount
}

// place points c, agent def's shim configuration here, at the shared
// app-server of its binary, account, env and settings, starting its broker
// the first time. On an error (the binary cannot be found, the socket
// cannot be made) c stays per-agent and the log says why.
func (d *Daemon) placeShared(def team.Agent, on host.Host, c *shimconfig.Config) {
	if !sharedWanted(def, on) {
		return
	}
	if d.shared == nil {
		return // not running (a configuration looked at outside Run)
	}
	sock, err := d.shared.socketFor(def, *c)
	if err != nil {
		d.log.Warn("No shared app-server for the agent; it runs its own", "agent", def.Name, "error", err)
		return
	}
	c.AppServerSocket = sock
}

// socketFor returns the socket of agent def's shared process, starting
// its broker when none runs yet.
func (s *sharedServers) socketFor(def team.Agent, c shimconfig.Config) (string, error) {
	d := s.d
	bin, err := codex.ResolveBinary(c.CodexBin)
	if err != nil {
		return "", fmt.Errorf("codex binary: %w", err)
	}
	var roleEnv []string
	for k, v := range def.Codex.Env {
		roleEnv = append(roleEnv, k+"="+v)
	}
	sort.Strings(roleEnv)
	home := codex.Home(c.Env, c.Cwd)
	args := shimconfig.SharedServerArgs(c.Exec)
	key := sharedKey(bin.Path, home, roleEnv, args)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", fmt.Errorf("the daemon is stopping")
	}
	// An agent moved to another account (or given other settings) leaves
	// the process it was on.
	for k, sv := range s.servers {
		if k != key {
			sv.remove(def.Name)
		}
	}
	if sv, ok := s.servers[key]; ok {
		sv.add(def.Name)
		return sv.b.Socket(), nil
	}
	dir := filepath.Join(d.layout.Dir, "appserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	// The process's environment: the shims', the launcher's, the role's
	// codex.env and the team's variables (CODEX_HOME included) — but no
	// agent's own: BATTY_AGENT and the like are each thread's.
	var env []string
	for _, kv := range c.Env {
		if k, _, _ := strings.Cut(kv, "="); k != agentenv.Agent {
			env = append(env, kv)
		}
	}
	env = append(bin.Environ(d.shimEnviron()), env...)
	env = append(env, reap.MarkEnv+"="+d.layout.Dir)
	sv := &sharedServer{key: key, account: home}
	o := appshare.Options{
		Server: appserver.Options{Bin: bin.Path, Args: args, Env: env, Cwd: dir},
		Socket: filepath.Join(dir, key+".sock"),
		Allow:  d.sharedPeer,
		Log:    d.log.Named("appserver").With("account", home),
		OnDeath: func(pid int, how string) {
			d.events.Append(eventlog.Event{Type: eventlog.EvAppServerDied,
				Detail: fmt.Sprintf("pid %d (CODEX_HOME %s, agents %s): %s", pid, home, strings.Join(sv.names(), ", "), how),
				Data:   eventlog.AppServerDied{PID: pid, Account: home, Agents: sv.names()}})
		},
	}
	// Placed as a shim is (the team's cgroup), killed with the daemon
	// (Pdeathsig) and, under a subreaper, a managed child: the reaper's
	// orphan scans leave it to its client, which reaps it.
	o.Server.Starter = childStarter{tp: d.procs, reaper: d.reaper}
	b, err := appshare.Listen(context.Background(), o)
	if err != nil {
		return "", err
	}
	sv.b = b
	sv.add(def.Name)
	s.servers[key] = sv
	d.log.Info("Shared app-server", "socket", b.Socket(), "account", home, "agent", def.Name)
	return b.Socket(), nil
}

// newSharedServers returns the daemon's (empty) set of shared
// app-servers.
func newSharedServers(d *Daemon) *sharedServers {
	return &sharedServers{d: d, servers: map[string]*sharedServer{}}
}

func (sv *sharedServer) add(agent string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if !slices.Contains(sv.agents, agent) {
		sv.agents = append(sv.agents, agent)
		sort.Strings(sv.agents)
	}
}

func (sv *sharedServer) remove(agent string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.agents = slices.DeleteFunc(sv.agents, func(a string) bool { return a == agent })
}

func (sv *sharedServer) names() []string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return slices.Clone(sv.agents)
}

// sharedPeer admits a connection to a shared app-server: only a live
// local shim of the team's, by its pid; its agent's name is returned.
// Safe from any goroutine (it reads the agents' snapshots).
func (d *Daemon) sharedPeer(pid int) (string, error) {
	for _, a := range d.agents {
		if s := a.snapshot(); s.shimPID == pid && pid > 0 {
			return a.def.Name, nil
		}
	}
	return "", fmt.Errorf("process %d is none of the team's shims", pid)
}

// sharedPids returns the pids of the running shared app-servers with the
// CODEX_HOME each serves: a process below one runs inside an agent's
// Codex (control.BelowServer). Safe from any goroutine.
func (d *Daemon) sharedPids() map[int]string {
	s := d.shared
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]string{}
	for _, sv := range s.servers {
		if pid := sv.b.Pid(); pid > 0 {
			out[pid] = sv.account
		}
	}
	return out
}

// sharedInfo says which shared app-server serves an agent.
type sharedInfo struct {
	PID     int
	Key     string // sharedKey
	Account string // CODEX_HOME
	Socket  string // the broker's
	Starts  int
}

// sharedOf returns the shared app-server agent runs on, if any.
func (d *Daemon) sharedOf(agent string) (sharedInfo, bool) {
	s := d.shared
	if s == nil {
		return sharedInfo{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sv := range s.servers {
		if slices.Contains(sv.names(), agent) {
			return sharedInfo{PID: sv.b.Pid(), Key: sv.key, Account: sv.account, Socket: sv.b.Socket(), Starts: sv.b.Starts()}, true
		}
	}
	return sharedInfo{}, false
}

// appServerStatus is the status of the shared app-server agent runs on,
// nil when it runs on none. Safe from any goroutine.
func (d *Daemon) appServerStatus(agent string) *control.AppServerStatus {
	s, ok := d.sharedOf(agent)
	if !ok {
		return nil
	}
	return &control.AppServerStatus{PID: s.PID, Key: s.Key, CodexHome: s.Account, Socket: s.Socket, Starts: s.Starts}
}

// closeShared ends every shared app-server (their process groups killed
// and reaped) once the last shim has stopped; no agent is placed on one
// afterwards. Idempotent.
func (d *Daemon) closeShared() {
	s := d.shared
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	servers := s.servers
	s.servers = map[string]*sharedServer{}
	s.mu.Unlock()
	for _, sv := range servers {
		if err := sv.b.Close(); err != nil {
			d.log.Warn("Closing a shared app-server", "error", err)
		}
	}
}

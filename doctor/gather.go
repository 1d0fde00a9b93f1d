package doctor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// What a team needs here, besides what its agents' commands need.
const (
	// AgentMemory is the memory one agent here needs: its Codex (the
	// native binary's resident set is about 150 MB, see docs/benchmarks.md)
	// and its shim, with room for the commands it runs.
	AgentMemory = 256 << 20
	// DaemonMemory is the daemon's and the cockpit's.
	DaemonMemory = 64 << 20
	// AgentDisk is one agent's transcripts (10 MiB × 4) and its share of
	// the event log and state.
	AgentDisk = 64 << 20
)

// maxParallel bounds the checks that run at once.
const maxParallel = 4

// Options are what Gather needs besides the team.
type Options struct {
	// Batty is this batty (hosts.Self): its version line, and what is
	// installed on hosts.
	Batty hosts.Binary
	// Transport reaches the hosts (nil: a default one).
	Transport *hosts.Transport
	// Dir is where the team works: the team file's directory, or the
	// current one without a team (its disk is checked).
	Dir string
	// Home is the home directory here ("~/" of paths on hosts).
	Home string
	// SandboxHomes is where the sandbox trials' fresh CODEX_HOMEs go.
	SandboxHomes string
	// Timeout bounds each codex run of a check (0:
	// preflight.DefaultTimeout).
	Timeout time.Duration
	// Reaper, when this process is a subreaper, starts the checks'
	// processes.
	Reaper *reap.Reaper
	// Shared are the shared app-servers the running team's status names
	// (SharedFromStatus); nil when the team does not run.
	Shared []SharedFacts
}

// target is one preflight target to check and who runs it.
type target struct {
	facts CodexFacts
	key   string
}

// Targets are the distinct ways cfg's agents run Codex: each agent on its
// own codex_home and on each account of its role, here or on its host
// (paths as the host sees them, per hosts.TargetThere, the home here being
// home), agents with the same target together, in the file's order. A nil
// cfg (no team) is the default codex here. It is a pure function.
func Targets(cfg *team.Config, home string) []CodexFacts {
	if cfg == nil {
		return []CodexFacts{{Agents: []string{"the default codex"}}}
	}
	var out []*target
	byKey := map[string]*target{}
	add := func(def team.Agent, account, codexHome string) {
		h, _ := host.For(cfg, def)
		t := host.On(h, host.Local{}, host.Remote{Root: cfg.Dir, Home: home}).Target(def, codexHome)
		key := def.Host + "\x00" + t.Key()
		if tg, ok := byKey[key]; ok {
			if !slices.Contains(tg.facts.Agents, def.Name) {
				tg.facts.Agents = append(tg.facts.Agents, def.Name)
			}
			return
		}
		tg := &target{key: key, facts: CodexFacts{Agents: []string{def.Name}, Account: account, Host: def.Host, Target: t}}
		byKey[key] = tg
		out = append(out, tg)
	}
	for _, def := range cfg.Agents() {
		own := ""
		for _, acc := range def.Accounts {
			if acc.CodexHome == def.Codex.CodexHome {
				own = acc.Name
			}
		}
		add(def, own, "")
		for _, acc := range def.Accounts {
			if acc.CodexHome != def.Codex.CodexHome {
				add(def, acc.Name, acc.CodexHome)
			}
		}
	}
	facts := make([]CodexFacts, len(out))
	for i, tg := range out {
		facts[i] = tg.facts
	}
	return facts
}

// SandboxUsers are the codex binaries whose sandbox the team uses here,
// each with who uses it: the local agents whose codex.sandbox is not
// danger-full-access, and the team's codex for verify and setup of
// worktree agents unless workspace.sandbox is off. A nil cfg is the
// default codex. It is a pure function.
func SandboxUsers(cfg *team.Config) []SandboxFacts {
	if cfg == nil {
		return []SandboxFacts{{Bin: "", For: "Codex's commands"}}
	}
	var out []SandboxFacts
	agents := map[string][]string{}
	var order []string
	for _, def := range cfg.Agents() {
		if def.Host != "" || def.Codex.Sandbox == "danger-full-access" {
			continue
		}
		if _, ok := agents[def.Codex.Bin]; !ok {
			order = append(order, def.Codex.Bin)
		}
		agents[def.Codex.Bin] = append(agents[def.Codex.Bin], def.Name)
	}
	for _, bin := range order {
		out = append(out, SandboxFacts{Bin: bin, For: "the commands of " + strings.Join(agents[bin], ", ")})
	}
	ws := cfg.Workspace
	if cfg.UsesWorktrees() && !ws.Sandbox.Off && (ws.Verify != "" || ws.Setup != "") {
		i := slices.IndexFunc(out, func(s SandboxFacts) bool { return s.Bin == cfg.Codex.Bin })
		if i >= 0 {
			out[i].For += ", and the team's verify and setup"
		} else {
			out = append(out, SandboxFacts{Bin: cfg.Codex.Bin, For: "the team's verify and setup"})
		}
	}
	return out
}

// Needs is the disk and the memory a team with local agents here needs
// (DaemonMemory, AgentMemory, workspaces.DefaultMinFree and AgentDisk).
// It is a pure function.
func Needs(local int) (disk, memory uint64) {
	n := uint64(max(local, 1))
	return workspaces.DefaultMinFree + n*AgentDisk, DaemonMemory + n*AgentMemory
}

// Gather runs every check for cfg (nil: no team, the default codex here)
// and returns what it found. It blocks for them: each codex run is
// bounded by o.Timeout, each host by hosts' own limits; ctx cuts them
// short. It never fails: what cannot be found is a fact.
func Gather(ctx context.Context, cfg *team.Config, o Options) Facts {
	f := Facts{Batty: o.Batty.Version, Codex: Targets(cfg, o.Home), Sandbox: SandboxUsers(cfg)}
	tr := o.Transport
	if tr == nil {
		tr = &hosts.Transport{}
	}
	checker := &preflight.Checker{Reaper: o.Reaper, Timeout: o.Timeout}
	local := 0
	if cfg != nil {
		f.NeedGit = cfg.UsesWorktrees()
		for _, def := range cfg.Agents() {
			if def.Host == "" {
				local++
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallel)
	run := func(fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn()
		}()
	}
	// Hosts first: their codex checks need batty there.
	hostIdx := map[string]int{}
	if cfg != nil {
		for _, def := range cfg.Agents() {
			if _, ok := hostIdx[def.Host]; def.Host == "" || ok {
				continue
			}
			h, _ := cfg.Host(def.Host)
			hostIdx[def.Host] = len(f.Hosts)
			f.Hosts = append(f.Hosts, HostFacts{Host: h})
		}
	}
	for i := range f.Hosts {
		run(func() { f.Hosts[i] = gatherHost(ctx, tr, f.Hosts[i].Host, o.Batty) })
	}
	wg.Wait()
	for i := range f.Codex {
		c := &f.Codex[i]
		var h HostFacts
		if i, ok := hostIdx[c.Host]; ok {
			h = f.Hosts[i]
		}
		// The host's batty was installed above (its line says why not):
		// the check uses it, never installs.
		on := host.On(h.Host, host.Local{Checker: checker}, host.Remote{Transport: tr, CheckTimeout: o.Timeout,
			Batty: func(context.Context) (string, error) { return h.Batty, nil }, Installed: func() string { return h.Batty }})
		if !on.Ready() {
			c.Skipped = "not checked: host " + c.Host + " is not ready (see its line)"
			continue
		}
		run(func() {
			r, err := on.Check(ctx, c.Target)
			if err != nil {
				r.Problem = on.Unreachable(err, "")
			}
			c.Report = r
		})
	}
	for i := range f.Sandbox {
		s := &f.Sandbox[i]
		if _, err := codex.ResolveBinary(s.Bin); err != nil {
			s.Skipped = "not checked: codex does not run (see its line)"
			continue
		}
		run(func() {
			p := &sandbox.Policy{Bin: or(s.Bin, codex.DefaultBinary), Homes: o.SandboxHomes}
			sctx, cancel := context.WithTimeout(ctx, sandboxTimeout(o.Timeout))
			defer cancel()
			if err := sandbox.Try(sctx, p, os.TempDir(), starter(o.Reaper)); err != nil {
				s.Err = err.Error()
			}
		})
	}
	f.Shared = slices.Clone(o.Shared)
	for i := range f.Shared {
		run(func() { f.Shared[i] = gatherShared(f.Shared[i]) })
	}
	run(func() { f.Git = tool(ctx, "git", "--version") })
	run(func() { f.Tmux = tool(ctx, "tmux", "-V") })
	wg.Wait()
	diskNeed, memNeed := Needs(local)
	f.Disk = Space{Where: o.Dir, Need: diskNeed}
	if free, err := diskFree(o.Dir); err != nil {
		f.Disk.Err = err.Error()
	} else {
		f.Disk.Free = free
	}
	f.Memory = Space{Need: memNeed}
	if avail, err := memAvailable(); err != nil {
		f.Memory.Err = err.Error()
	} else {
		f.Memory.Free = avail
	}
	return f
}

// starter is r as a reap.Starter, nil when r is.
func starter(r *reap.Reaper) reap.Starter {
	if r == nil {
		return nil
	}
	return r
}

// sandboxTimeout bounds a sandbox trial: a codex run.
func sandboxTimeout(check time.Duration) time.Duration {
	if check <= 0 {
		check = preflight.DefaultTimeout
	}
	return check
}

// gatherHost reaches h (a shell that runs `true`), then installs this
// batty there if it is not (hosts.EnsureBatty).
func gatherHost(ctx context.Context, tr *hosts.Transport, h team.Host, b hosts.Binary) HostFacts {
	f := HostFacts{Host: h}
	rctx, cancel := context.WithTimeout(ctx, hosts.ShimHandshakeTimeout)
	_, err := tr.Run(rctx, h, "true", nil)
	cancel()
	if err != nil {
		f.Unreachable = err.Error()
		return f
	}
	ictx, cancel := context.WithTimeout(ctx, hosts.InstallTimeout)
	defer cancel()
	if b.Path == "" {
		f.Install = "this batty has no binary to install there"
		return f
	}
	path, err := hosts.EnsureBatty(ictx, tr, h, b)
	if err != nil {
		f.Install = err.Error()
		return f
	}
	f.Batty = path
	return f
}

// toolTimeout bounds a tool's version run.
const toolTimeout = 10 * time.Second

// tool runs name with args (its version) and returns its first line.
func tool(ctx context.Context, name string, args ...string) Tool {
	path, err := exec.LookPath(name)
	if err != nil {
		return Tool{Err: "not on PATH"}
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.Command(path, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := reap.RunGroup(ctx, cmd, nil); err != nil {
		return Tool{Err: fmt.Sprintf("%s %s: %v", path, strings.Join(args, " "), err)}
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if line == "" {
		line = name
	}
	return Tool{Version: line}
}

// diskFree is the space available to this user on dir's file system.
func diskFree(dir string) (uint64, error) {
	if dir == "" {
		return 0, errors.New("no directory")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// memAvailable is MemAvailable of /proc/meminfo.
func memAvailable() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMemAvailable(bufio.NewScanner(f))
}

// parseMemAvailable reads MemAvailable (in kB) from a meminfo's lines.
func parseMemAvailable(sc *bufio.Scanner) (uint64, error) {
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/meminfo: MemAvailable %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/proc/meminfo has no MemAvailable")
}

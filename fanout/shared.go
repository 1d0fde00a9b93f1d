package fanout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/codex/appshare"
	"github.com/battyhq/batty/shim/shimconfig"
)

// SharedReadyTimeout bounds the start of a job's shared app-servers
// before its first row.
const SharedReadyTimeout = 60 * time.Second

// SharedSetup says how to run a job's shared app-servers.
type SharedSetup struct {
	// Config is the workers' configuration here: its codex binary, Env
	// (CODEX_HOME included, unless Homes set it) and the -c settings
	// (shimconfig.SharedServerArgs) are the processes'.
	Config shimconfig.Config
	// Env is the shims' environment (nil: this process's), which the
	// processes start from, as a shim's codex does.
	Env []string
	// Homes are the CODEX_HOME of each account, in Options.Accounts'
	// order: one process per account. Empty: one process, on Config's.
	Homes []string
	// Log receives the brokers' log (nil: none).
	Log hclog.Logger
}

// SharedServers are a job's shared app-servers: one `codex app-server`
// process per account, each behind a broker (package codex/appshare)
// whose socket the job's local workers' shims get
// (shimconfig.Config.AppServerSocket): every row runs as a thread of its
// account's process, with its own working directory, sandbox and
// environment, and sees no other row's thread. A broker lets in only the
// shims the job started (Admit), restarts its process when it dies and
// ends the connections then (the rows in flight fail as cut off, see
// Died). Its methods are safe for concurrent use.
type SharedServers struct {
	dir     string // the sockets' directory, the job's alone (0700)
	brokers []*appshare.Broker
	deaths  []atomic.Int64 // by account: deaths of its process
	forks   *forker

	mu   sync.Mutex
	pids map[int]string // the shims let in, with their worker's name
}

// StartShared starts one shared app-server per account of o and waits
// until each has opened its session (at most SharedReadyTimeout; ctx cuts
// it short). The processes are the job's children, SIGKILLed should the
// job die. On an error nothing is left running.
func StartShared(ctx context.Context, o SharedSetup) (*SharedServers, error) {
	bin, err := codex.ResolveBinary(o.Config.CodexBin)
	if err != nil {
		return nil, fmt.Errorf("codex binary: %w", err)
	}
	dir, err := os.MkdirTemp("", "batty-fanout-")
	if err != nil {
		return nil, fmt.Errorf("the shared app-servers' directory: %w", err)
	}
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	homes := o.Homes
	if len(homes) == 0 {
		homes = []string{""}
	}
	s := &SharedServers{dir: dir, deaths: make([]atomic.Int64, len(homes)), pids: map[int]string{}, forks: newForker()}
	base := o.Env
	if base == nil {
		base = os.Environ()
	}
	args := shimconfig.SharedServerArgs(o.Config.Exec)
	for i, home := range homes {
		env := bin.Environ(base)
		for _, kv := range o.Config.Env {
			if k, _, _ := strings.Cut(kv, "="); k != agentenv.Agent {
				env = append(env, kv)
			}
		}
		if home != "" {
			env = codex.WithHome(env, home)
		}
		b, err := appshare.Listen(context.Background(), appshare.Options{
			Server:  appserver.Options{Bin: bin.Path, Args: args, Env: env, Cwd: dir, Starter: s.forks},
			Socket:  filepath.Join(dir, fmt.Sprintf("account-%d.sock", i)),
			Allow:   s.admit,
			OnDeath: func(int, string) { s.deaths[i].Add(1) },
			Log:     log.Named("appserver").With("account", i+1),
		})
		if err != nil {
			s.Close()
			return nil, err
		}
		s.brokers = append(s.brokers, b)
	}
	rctx, cancel := context.WithTimeout(ctx, SharedReadyTimeout)
	defer cancel()
	errs := make([]error, len(s.brokers))
	var wg sync.WaitGroup
	for i, b := range s.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Ready(rctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Socket returns the broker socket of account's process (an index of
// SharedSetup.Homes; 0 with none).
func (s *SharedServers) Socket(account int) string {
	return s.brokers[min(max(account, 0), len(s.brokers)-1)].Socket()
}

// Deaths returns how often account's process has died so far.
func (s *SharedServers) Deaths(account int) int64 {
	return s.deaths[min(max(account, 0), len(s.deaths)-1)].Load()
}

// Pids returns the pids of the running processes (0 for one starting
// again), by account.
func (s *SharedServers) Pids() []int {
	out := make([]int, len(s.brokers))
	for i, b := range s.brokers {
		out[i] = b.Pid()
	}
	return out
}

// Admit lets the shim pid of worker name connect; Forget takes that back.
func (s *SharedServers) Admit(pid int, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pids[pid] = name
}

// Forget: see Admit.
func (s *SharedServers) Forget(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pids, pid)
}

// admit is the brokers' Options.Allow: only a shim the job admitted.
func (s *SharedServers) admit(pid int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name, ok := s.pids[pid]; ok && pid > 0 {
		return name, nil
	}
	return "", fmt.Errorf("process %d is none of the job's shims", pid)
}

// Close ends every process (its whole group, reaped) and the brokers,
// and removes the sockets' directory. Call it once the workers have
// stopped. Idempotent.
func (s *SharedServers) Close() error {
	var errs []error
	for _, b := range s.brokers {
		errs = append(errs, b.Close())
	}
	s.brokers = s.brokers[:0]
	if s.forks != nil {
		s.forks.close()
		s.forks = nil
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return errors.Join(errs...)
}

// forker starts the shared app-servers (a reap.Starter) with SIGKILL as
// their parent-death signal, from one OS thread that lives as long as
// they may: the kernel sends that signal when the thread that forked a
// child ends, and a Go thread may end while the job lives on (one a
// goroutine locked and left), which would kill a process behind its
// broker's back and pass for a crash.
type forker struct {
	reqs chan forkRequest
	quit chan struct{}
	done chan struct{}
}

type forkRequest struct {
	cmd *exec.Cmd
	err chan error
}

func newForker() *forker {
	f := &forker{reqs: make(chan forkRequest), quit: make(chan struct{}), done: make(chan struct{})}
	go f.loop()
	return f
}

// loop forks on its locked thread until close; the thread ends with it,
// once the processes it forked are gone (close comes after the brokers').
func (f *forker) loop() {
	defer close(f.done)
	runtime.LockOSThread()
	for {
		select {
		case r := <-f.reqs:
			r.err <- r.cmd.Start()
		case <-f.quit:
			return
		}
	}
}

// Start starts cmd (its SysProcAttr kept, Pdeathsig added) on the
// forker's thread.
func (f *forker) Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := forkRequest{cmd: cmd, err: make(chan error, 1)}
	select {
	case f.reqs <- r:
		return <-r.err
	case <-f.quit:
		return errors.New("the job is ending: no process starts")
	}
}

// Release is nothing to do: the forker is no reaper.
func (f *forker) Release(int) {}

func (f *forker) close() {
	close(f.quit)
	<-f.done
}

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

// SharedReadyTimeout bounds the start of a job's shared app-server.
const SharedReadyTimeout = 60 * time.Second

// DefaultRecycleRows is how many rows a shared app-server runs before a
// fresh one takes the next rows (SharedSetup.RecycleRows): codex keeps
// every thread it started loaded, about a megabyte each, for its life.
const DefaultRecycleRows = 256

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
	// RecycleRows is how many rows one process runs before a fresh one
	// takes the next rows (DefaultRecycleRows when 0; negative: never).
	// The old one ends once the rows running on it have finished.
	RecycleRows int
	// Log receives the brokers' log (nil: none).
	Log hclog.Logger
}

// SharedServers are a job's shared app-servers: one `codex app-server`
// process per account at a time, each behind a broker (package
// codex/appshare) whose socket the job's local workers' shims get
// (shimconfig.Config.AppServerSocket): every row runs as a thread of its
// account's process, with its own working directory, sandbox and
// environment, and sees no other row's thread. A broker lets in only the
// shims the job started (Admit), restarts its process when it dies and
// ends the connections then (the rows in flight fail as cut off, see
// Deaths). After SharedSetup.RecycleRows rows a fresh process takes over
// for the next rows (workers move to it with their next row, see Lease
// and Row) and the old one ends when no worker is left on it. Its
// methods are safe for concurrent use.
type SharedServers struct {
	dir     string // the sockets' directory, the job's alone (0700)
	bin     string
	args    []string
	envs    [][]string // by account
	recycle int
	log     hclog.Logger
	forks   *forker
	deaths  []atomic.Int64 // by account: deaths of its processes
	retired sync.WaitGroup // old processes being ended

	mu     sync.Mutex
	accts  []*sharedAccount
	pids   map[int]string // the shims let in, with their worker's name
	seq    int            // processes started (names their sockets)
	closed bool
}

// sharedAccount is an account's processes: the current one, and whether
// a fresh one is starting.
type sharedAccount struct {
	cur      *Lease
	starting bool
}

// Lease is a worker's hold on one of the job's processes: its shim runs
// there until it gives it back (SharedServers.Release).
type Lease struct {
	b       *appshare.Broker
	account int
	rows    int // rows started on it
	holders int // workers holding it
	retired bool
}

// Socket is the broker's socket of the lease's process.
func (l *Lease) Socket() string { return l.b.Socket() }

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
	homes := o.Homes
	if len(homes) == 0 {
		homes = []string{""}
	}
	s := &SharedServers{dir: dir, bin: bin.Path, args: shimconfig.SharedServerArgs(o.Config.Exec), recycle: o.RecycleRows,
		log: o.Log, forks: newForker(), deaths: make([]atomic.Int64, len(homes)), pids: map[int]string{}}
	if s.recycle == 0 {
		s.recycle = DefaultRecycleRows
	}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	base := o.Env
	if base == nil {
		base = os.Environ()
	}
	for _, home := range homes {
		env := bin.Environ(base)
		for _, kv := range o.Config.Env {
			if k, _, _ := strings.Cut(kv, "="); k != agentenv.Agent {
				env = append(env, kv)
			}
		}
		if home != "" {
			env = codex.WithHome(env, home)
		}
		s.envs = append(s.envs, env)
	}
	leases := make([]*Lease, len(homes))
	errs := make([]error, len(homes))
	var wg sync.WaitGroup
	for i := range homes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leases[i], errs[i] = s.start(ctx, i)
		}()
	}
	wg.Wait()
	for _, l := range leases {
		s.accts = append(s.accts, &sharedAccount{cur: l})
	}
	if err := errors.Join(errs...); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start starts a process for account and waits until it is ready.
func (s *SharedServers) start(ctx context.Context, account int) (*Lease, error) {
	s.mu.Lock()
	s.seq++
	sock := filepath.Join(s.dir, fmt.Sprintf("%d.sock", s.seq))
	s.mu.Unlock()
	b, err := appshare.Listen(context.Background(), appshare.Options{
		Server:  appserver.Options{Bin: s.bin, Args: s.args, Env: s.envs[account], Cwd: s.dir, Starter: s.forks},
		Socket:  sock,
		Allow:   s.admit,
		OnDeath: func(int, string) { s.deaths[account].Add(1) },
		Log:     s.log.Named("appserver").With("account", account+1),
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, SharedReadyTimeout)
	defer cancel()
	if err := b.Ready(rctx); err != nil {
		b.Close()
		return nil, err
	}
	return &Lease{b: b, account: account}, nil
}

// Lease returns account's current process (an index of SharedSetup.Homes;
// 0 with none) for a worker's shim to run on, until Release.
func (s *SharedServers) Lease(account int) *Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.accts[min(max(account, 0), len(s.accts)-1)].cur
	l.holders++
	return l
}

// Row counts a row starting on l and reports whether l is still its
// account's current process; when it is not, the worker gives it back
// and takes the current one before the row. The row that makes l's
// count reach SharedSetup.RecycleRows has a fresh process started in
// the background, which takes over once ready.
func (s *SharedServers) Row(l *Lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accts[l.account]
	if a.cur != l {
		return false
	}
	l.rows++
	if s.recycle > 0 && l.rows >= s.recycle && !a.starting && !s.closed {
		a.starting = true
		s.retired.Add(1)
		go s.renew(l.account)
	}
	return true
}

// renew starts a fresh process for account and makes it the current one;
// the old one ends once no worker holds it. A fresh one that does not
// start leaves the old one current (a later row tries again).
func (s *SharedServers) renew(account int) {
	defer s.retired.Done()
	l, err := s.start(context.Background(), account)
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accts[account]
	a.starting = false
	if err != nil {
		a.cur.rows = 0
		s.log.Warn("A fresh shared app-server did not start; rows stay on the running one", "account", account+1, "error", err)
		return
	}
	if s.closed {
		s.retired.Add(1)
		go s.end(l)
		return
	}
	old := a.cur
	a.cur, old.retired = l, true
	s.log.Info("A fresh shared app-server takes the next rows", "account", account+1, "rows", old.rows, "pid", l.b.Pid())
	if old.holders == 0 {
		s.retired.Add(1)
		go s.end(old)
	}
}

// Release gives back a worker's lease; the last holder of a retired
// process ends it (in the background).
func (s *SharedServers) Release(l *Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.holders--
	if l.retired && l.holders == 0 {
		s.retired.Add(1)
		go s.end(l)
	}
}

// end ends a retired process and its broker.
func (s *SharedServers) end(l *Lease) {
	defer s.retired.Done()
	if err := l.b.Close(); err != nil {
		s.log.Warn("Ending a retired shared app-server", "error", err)
	}
}

// Deaths returns how often account's processes have died so far.
func (s *SharedServers) Deaths(account int) int64 {
	return s.deaths[min(max(account, 0), len(s.deaths)-1)].Load()
}

// Pids returns the pids of the current processes (0 for one starting
// again), by account.
func (s *SharedServers) Pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(s.accts))
	for i, a := range s.accts {
		if a.cur != nil {
			out[i] = a.cur.b.Pid()
		}
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
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	accts := s.accts
	s.mu.Unlock()
	var errs []error
	for _, a := range accts {
		if a.cur != nil {
			errs = append(errs, a.cur.b.Close())
		}
	}
	s.retired.Wait()
	s.forks.close()
	errs = append(errs, os.RemoveAll(s.dir))
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

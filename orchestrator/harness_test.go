package orchestrator

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/project/projecttest"
	"github.com/battyhq/batty/shim"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimtest"
	"github.com/battyhq/batty/team"
)

// TestMain lets this test binary be a shim (a real one, or one that sends an
// undecodable frame), a fake codex, or a whole daemon (for the SIGKILL
// test), selected by BATTY_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "shim":
		os.Exit(shim.Main(os.Args[1:]))
	case "badframeshim":
		os.Exit(badFrameShimMain(os.Args[1:]))
	case "fakecodex":
		os.Exit(codextest.FakeMain(os.Args[1:]))
	case "daemon":
		os.Exit(daemonMain(os.Args[1]))
	case "runchild":
		os.Exit(runChildMain(os.Args[1]))
	case "childstarter":
		os.Exit(childStarterMain(os.Args[1]))
	case "ctlclient":
		os.Exit(ctlClientMain(os.Args[1], os.Args[2]))
	}
	code := projecttest.Isolated(m.Run)
	hoststest.RemoveBuilds()
	os.Exit(code)
}

const waitLimit = 60 * time.Second

// testProject is a team on disk whose codex is the fake.
type testProject struct {
	t       testing.TB
	dir     string
	cfg     *team.Config
	layout  project.Layout
	fakeLog string
	prompts string // every prompt the fake codex read (FAKE_CODEX_PROMPTS)
	mark    string
}

// newProject writes team.yaml (roles given as YAML lines under "roles:")
// with the fake codex as every agent's worker.
func newProject(t testing.TB, roles string) *testProject {
	t.Helper()
	return newProjectWith(t, "timeouts:\n  shutdown: 5s\n", roles)
}

// newProjectWith is newProject with top, top-level YAML lines, before roles.
func newProjectWith(t testing.TB, top, roles string) *testProject {
	t.Helper()
	dir := t.TempDir()
	// The fake codex: a copy of the test binary outside /tmp, which its
	// agents (workspace-write) may write.
	self := projecttest.Executable(t)
	p := &testProject{t: t, dir: dir, fakeLog: filepath.Join(dir, "fake.log"), prompts: filepath.Join(dir, "prompts.log"), mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	state := filepath.Join(dir, "fakestate")
	os.MkdirAll(state, 0o700)
	yaml := fmt.Sprintf(`name: test
codex:
  bin: %s
  env:
    BATTY_TEST_ROLE: fakecodex
    CODEX_API_KEY: fake-key-no-login-needed
    FAKE_CODEX_STATE: %s
    FAKE_CODEX_LOG: %s
    FAKE_CODEX_PROMPTS: %s
%sroles:
%s`, self, state, p.fakeLog, p.prompts, top, roles)
	p.writeTeam(yaml)
	return p
}

// writeTeam writes yaml as the project's team.yaml and loads it into p.cfg
// and p.layout, failing the test if either step fails.
func (p *testProject) writeTeam(yaml string) {
	p.t.Helper()
	path := filepath.Join(p.dir, "team.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		p.t.Fatal(err)
	}
	var err error
	if p.cfg, err = team.Load(path); err != nil {
		p.t.Fatalf("team.yaml: %v", err)
	}
	p.layout, _ = project.LayoutFor(path)
}

func (p *testProject) shimEnv() []string {
	return append(os.Environ(), "BATTY_TEST_ROLE=shim", "BATTY_TEST_MARK="+p.mark, "BATTY_LOG_LEVEL=debug")
}

// sendAndWait sends body to box from human, waits for the message's
// outcome (see running.finished) and fails the test unless its status is
// want. It returns the message id.
func (p *testProject) sendAndWait(r *running, box, body, want string) string {
	p.t.Helper()
	id := p.send(box, "human", body)
	if st := r.finished(p.t, id); st != want {
		p.t.Fatalf("message %q to %s: status %s; want %s", body, box, st, want)
	}
	return id
}

// send writes a message into a box the way `batty send` does.
func (p *testProject) send(box, from, body string) string {
	p.t.Helper()
	s, err := inbox.Open(p.layout.Inboxes())
	if err != nil {
		p.t.Fatal(err)
	}
	b, err := s.Box(box)
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := b.Deliver(inbox.Message{From: from, To: strings.TrimPrefix(box, "@"), Body: body})
	if err != nil {
		p.t.Fatal(err)
	}
	return m.ID
}

// box opens a box for inspection.
func (p *testProject) box(name string) *inbox.Box {
	p.t.Helper()
	s, err := inbox.Open(p.layout.Inboxes())
	if err != nil {
		p.t.Fatal(err)
	}
	b, err := s.Box(name)
	if err != nil {
		p.t.Fatal(err)
	}
	return b
}

// deliveries counts the fake codex invocations that ran message id.
func (p *testProject) deliveries(id string) int {
	b, _ := os.ReadFile(p.fakeLog)
	return strings.Count(string(b), "batty message "+id+" ")
}

// running is an in-process daemon with an event feed.
type running struct {
	d      *Daemon
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	seen   []eventlog.Event
	notify chan struct{}
	log    *syncLog
}

type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncLog) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

// start runs a daemon for p in this process until the test ends.
func (p *testProject) start(mod func(*Options)) *running {
	p.t.Helper()
	self, _ := os.Executable()
	r := &running{done: make(chan error, 1), notify: make(chan struct{}, 1), log: &syncLog{}}
	opts := Options{
		ShimCommand: []string{self}, ShimEnv: p.shimEnv(),
		Logger:  hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: r.log}),
		ShimLog: r.log, Supervision: Supervision{RespawnMin: 50 * time.Millisecond, RespawnMax: 200 * time.Millisecond},
		OnEvent: func(e eventlog.Event) {
			r.mu.Lock()
			r.seen = append(r.seen, e)
			r.mu.Unlock()
			select {
			case r.notify <- struct{}{}:
			default:
			}
		},
	}
	if mod != nil {
		mod(&opts)
	}
	d, err := New(p.cfg, p.layout, opts)
	if err != nil {
		p.t.Fatalf("new daemon: %v", err)
	}
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- d.Run(ctx) }()
	select {
	case <-d.Ready():
	case err := <-r.done:
		p.t.Fatalf("daemon ended before ready: %v", err)
	}
	p.t.Cleanup(func() {
		r.stop(p.t)
		if p.t.Failed() {
			p.t.Logf("daemon log:\n%s", r.log.b.String())
		}
		assertNoProcesses(p.t, p.mark)
	})
	return r
}

// stop cancels the daemon and waits for it (idempotent).
func (r *running) stop(t testing.TB) {
	r.cancel()
	select {
	case <-r.done:
		r.done <- nil
	case <-time.After(waitLimit):
		t.Errorf("daemon did not stop within %s", waitLimit)
	}
}

// waitEvent waits up to waitLimit for an event matching f and returns it.
func (r *running) waitEvent(t testing.TB, what string, f func(eventlog.Event) bool) eventlog.Event {
	t.Helper()
	return r.waitEventWithin(t, waitLimit, what, f)
}

// waitEventWithin is waitEvent with its own time limit.
func (r *running) waitEventWithin(t testing.TB, limit time.Duration, what string, f func(eventlog.Event) bool) eventlog.Event {
	t.Helper()
	deadline := time.After(limit)
	i := 0
	for {
		r.mu.Lock()
		for ; i < len(r.seen); i++ {
			if f(r.seen[i]) {
				e := r.seen[i]
				r.mu.Unlock()
				return e
			}
		}
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("no %s within %s", what, limit)
		}
	}
}

// finished waits for the outcome of message id to be recorded (a turn that
// put the message back in the queue does not count) and returns its status.
func (r *running) finished(t testing.TB, id string) string {
	t.Helper()
	e := r.waitEvent(t, "turn_finished for "+id, func(e eventlog.Event) bool {
		return e.Type == eventlog.EvTurnFinished && e.Message == id && !payloadOf[eventlog.TurnFinished](e).Requeued
	})
	return payloadOf[eventlog.TurnFinished](e).Status
}

// payloadOf is e's payload as a T, the zero T when it carries none or
// another kind's.
func payloadOf[T eventlog.Payload](e eventlog.Event) T {
	p, _ := e.Data.(T)
	return p
}

func (r *running) count(typ, id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.seen {
		if e.Type == typ && (id == "" || e.Message == id) {
			n++
		}
	}
	return n
}

// daemonMain runs a daemon in a child process for the SIGKILL test.
func daemonMain(teamFile string) int {
	cfg, err := team.Load(teamFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, _ := project.LayoutFor(teamFile)
	self, _ := os.Executable()
	env := append(os.Environ(), "BATTY_TEST_ROLE=shim")
	opts := Options{ShimCommand: []string{self}, ShimEnv: env, Subreaper: true, NoCgroup: os.Getenv("BATTY_TEST_NOCGROUP") != ""}
	chaosOptions(&opts)
	if path := os.Getenv("BATTY_TEST_DAEMON_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		opts.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: f})
	}
	d, err := New(cfg, l, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		<-d.Ready()
		fmt.Println("ready")
	}()
	if err := d.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChildDaemon runs a daemon process for p, with env added to its
// environment, and waits until it is ready. BATTY_TEST_NOCGROUP=1 keeps
// its shims out of a cgroup.
func (p *testProject) startChildDaemon(env ...string) *exec.Cmd {
	p.t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self, filepath.Join(p.dir, "team.yaml"))
	cmd.Env = append(append(os.Environ(), "BATTY_TEST_ROLE=daemon", "BATTY_TEST_MARK="+p.mark), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kept for the failure message: why a child did not become ready.
	stderr := &syncLog{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			p.t.Fatalf("child daemon did not become ready (%v); its stderr:\n%s", cmd.ProcessState, stderr.String())
		}
	case <-time.After(waitLimit):
		cmd.Process.Kill()
		cmd.Wait()
		p.t.Fatalf("child daemon not ready in time; its stderr:\n%s", stderr.String())
	}
	return cmd
}

// assertNoProcesses fails when any live process carries mark.
func assertNoProcesses(t testing.TB, mark string) {
	t.Helper()
	codextest.AssertNoMarked(t, mark)
}

// layoutOf is the layout of the project whose team file is dir/team.yaml:
// its state directory under the tests' state home.
func layoutOf(t testing.TB, dir string) project.Layout {
	t.Helper()
	l, err := project.LayoutFor(filepath.Join(dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// inProcess runs the agents' workers in this process (shimtest.Fake, held
// to a real shim by its conformance suite) instead of shim processes: for
// tests of the turn logic, which need no process of a shim or of codex.
// The fake stands for the fake codex's text, empty, usage, slow, sleepms
// and gate scenarios.
func inProcess(o *Options) {
	o.StartWorker = func(ctx context.Context, so shimclient.SpawnOptions) (Worker, error) {
		return shimtest.StartFake(ctx, so)
	}
}

// inProcessWith is inProcess, then mod.
func inProcessWith(mod func(*Options)) func(*Options) {
	return func(o *Options) {
		inProcess(o)
		mod(o)
	}
}

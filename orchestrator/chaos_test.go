package orchestrator

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
)

// The chaos run's size. The defaults are the suite's (CI) size;
// scripts/chaos.sh runs the full size: 1,000 messages, 3 daemon kills.
var (
	chaosMessages    = flag.Int("chaos.messages", 150, "TestChaos: messages to send")
	chaosDaemonKills = flag.Int("chaos.daemonkills", 1, "TestChaos: times the daemon is SIGKILLed and restarted")
	chaosSeed        = flag.Uint64("chaos.seed", 0, "TestChaos: random seed (0: from the clock)")
)

// chaosTeam is 8 agents in two roles of 4 instances: half the messages go
// to the role queues (@eng, @qa), half straight to instances.
const chaosTeam = `  - name: eng
    instances: 4
    talks_to: [eng, qa]
  - name: qa
    instances: 4
    talks_to: [eng, qa]
`

// chaosEnv, in a child daemon's environment, makes its supervision
// tolerate the chaos run's shim kills (see chaosOptions).
const chaosEnv = "BATTY_TEST_CHAOS"

// chaosOptions tunes a child daemon for the chaos run when chaosEnv is set:
// a shim is SIGKILLed every 100–200 ms, ≈ 40 kills a minute per agent, far
// over the 5-crashes-in-60-s rule that marks an agent failed; the run
// measures delivery under crashes, so the rule is lifted (MaxCrashes) and
// the respawn back-off kept short.
func chaosOptions(o *Options) {
	if os.Getenv(chaosEnv) == "" {
		return
	}
	o.MaxCrashes = math.MaxInt32
	o.RespawnMin, o.RespawnMax = 20*time.Millisecond, 200*time.Millisecond
}

// chaosFigures is what a chaos run measured.
type chaosFigures struct {
	messages, preQueued, daemonKills, shimKills int
	lost, duplicates, maxExecutions, procsLeft  int
	fromAgents, repliesLost, repliesDuplicate   int
	executions                                  int
	statuses                                    map[string]int
	routingAtKill                               [][2]int
	wall                                        time.Duration
}

func (f chaosFigures) String() string {
	var st []string
	for k, v := range f.statuses {
		st = append(st, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(st)
	return fmt.Sprintf("messages %d (%d queued before the daemon started), daemon SIGKILLs %d ([routed, still to route] of the role-queue messages at each: %v), shim SIGKILLs %d; "+
		"outcomes: %s; lost %d, duplicate outcomes %d; replies (%d messages from agents) lost %d, duplicate %d; worker executions %d, max of one message %d; processes left %d; wall %s",
		f.messages, f.preQueued, f.daemonKills, f.routingAtKill, f.shimKills, strings.Join(st, ", "),
		f.lost, f.duplicates, f.fromAgents, f.repliesLost, f.repliesDuplicate, f.executions, f.maxExecutions, f.procsLeft, f.wall.Round(100*time.Millisecond))
}

// benchLine is the figures as one line in the Go benchmark format, the
// line scripts/bench.sh records for docs/benchmarks.md (go test prints it
// with -v, or when the test fails).
func (f chaosFigures) benchLine() string {
	return fmt.Sprintf("BenchmarkChaos\t1\t%d ns/op\t%d messages\t%d daemon-kills\t%d shim-kills\t%d lost\t%d duplicates\t%d replies-lost\t%d replies-duplicate\t%d executions\t%d max-executions\t%d procs-left\t%.1f wall-s",
		f.wall.Nanoseconds(), f.messages, f.daemonKills, f.shimKills, f.lost, f.duplicates, f.repliesLost, f.repliesDuplicate, f.executions, f.maxExecutions, f.procsLeft, f.wall.Seconds())
}

// TestChaos sends messages to an 8-agent team on the fake worker while a
// random shim is SIGKILLed every 100–200 ms and the daemon is SIGKILLed
// (and restarted) at random moments, one of them right after a burst of
// role-queue messages, while it routes them. Some messages are queued
// before the daemon starts; every fourth is sent by an agent, whose reply
// goes back to that agent (which runs a turn on it). At the end every
// message must have exactly one recorded outcome (a done/ entry) across all
// boxes and every completed one exactly one reply in its sender's inbox,
// and no process of the run may be left. It prints the figures (run with
// -v).
func TestChaos(t *testing.T) {
	n, kills := *chaosMessages, *chaosDaemonKills
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d (-chaos.seed to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))

	p := newProject(t, chaosTeam)
	agents := p.cfg.Agents()
	roles := []string{"@eng", "@qa"}
	// Messages alternate in blocks of 10: to instances, then to the role
	// queues (a daemon kill comes right after a block to the queues).
	const burst, window = 10, 80 // messages per burst, most outstanding at once
	boxFor := func(i int) string {
		if i/burst%2 == 1 {
			return roles[i%len(roles)]
		}
		return agents[i%len(agents)].Name
	}
	store, err := inbox.Open(p.layout.Inboxes())
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, n)
	from := map[string]string{} // the sender of each message
	send := func(count int) {
		t.Helper()
		for ; count > 0 && len(ids) < n; count-- {
			i := len(ids)
			name := boxFor(i)
			b, err := store.Box(name)
			if err != nil {
				t.Fatal(err)
			}
			sender := "human"
			if i%4 == 3 {
				sender = agents[(i+3)%len(agents)].Name
			}
			m, err := b.Deliver(inbox.Message{From: sender, To: strings.TrimPrefix(name, "@"), Body: fmt.Sprintf("chaos message %d", i)})
			if err != nil {
				t.Fatalf("send %d to %s: %v", i, name, err)
			}
			ids = append(ids, m.ID)
			from[m.ID] = sender
		}
	}

	f := chaosFigures{messages: n, preQueued: n / 5 / burst * burst}
	send(f.preQueued)

	var (
		childMu sync.Mutex
		child   *exec.Cmd
	)
	startDaemon := func() {
		// A race-enabled binary sleeps 1 s at exit by default: every shim
		// and worker run would pay it.
		c := p.startChildDaemon(chaosEnv+"=1", "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
		childMu.Lock()
		child = c
		childMu.Unlock()
	}
	t.Cleanup(func() {
		childMu.Lock()
		c := child
		childMu.Unlock()
		if c != nil && c.ProcessState == nil {
			c.Process.Kill()
			c.Wait()
		}
	})
	start := time.Now()
	startDaemon()

	// The shim killer: a random live shim of the run, every 100–200 ms.
	stopKiller := make(chan struct{})
	killerDone := make(chan int)
	go func() {
		krng := rand.New(rand.NewPCG(seed+1, seed>>2))
		killed := 0
		defer func() { killerDone <- killed }()
		for {
			select {
			case <-stopKiller:
				return
			case <-time.After(100*time.Millisecond + time.Duration(krng.IntN(100))*time.Millisecond):
			}
			childMu.Lock()
			daemonPID := 0
			if child != nil {
				daemonPID = child.Process.Pid
			}
			childMu.Unlock()
			shims := childrenOf(daemonPID)
			if len(shims) == 0 {
				continue
			}
			if syscall.Kill(shims[krng.IntN(len(shims))], syscall.SIGKILL) == nil {
				killed++
			}
		}
	}()
	stopKillerOnce := sync.OnceFunc(func() {
		close(stopKiller)
		f.shimKills = <-killerDone
	})
	t.Cleanup(stopKillerOnce)

	// Each daemon kill happens once the outcomes pass a random point of its
	// share of the run, right after a burst of messages (half of them to
	// role queues) lands, so that the daemon is routing when it dies.
	killAt := make([]int, kills)
	for k := range killAt {
		lo, hi := n*k/(kills+1), n*(k+1)/(kills+1)
		killAt[k] = lo + rng.IntN(max(hi-lo, 1))
	}
	// The run ends when every message has an outcome, or when none was
	// recorded for stallLimit: then the missing ones are reported below.
	const stallLimit = 30 * time.Second
	lastDone, lastProgress := -1, time.Now()
	for {
		done := countDone(t, p)
		if done >= n {
			break
		}
		if done != lastDone {
			lastDone, lastProgress = done, time.Now()
		}
		if time.Since(lastProgress) > stallLimit/3 {
			// On a loaded machine a shim killed every 100–200 ms may never
			// get a turn done: the killing stops, and what is left must
			// still come out, once each.
			stopKillerOnce()
		}
		if time.Since(lastProgress) > stallLimit {
			t.Errorf("only %d of %d messages have an outcome, none new for %s", done, n, stallLimit)
			break
		}
		if f.daemonKills < kills && done >= killAt[f.daemonKills] {
			if len(ids)/burst%2 == 1 {
				send(burst) // to the queues: the kill follows the next such block
			}
			before := waitingInRoleQueues(t, p, roles)
			send(2 * burst)
			time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond) // a random moment within the routing
			childMu.Lock()
			child.Process.Signal(syscall.SIGKILL)
			child.Wait()
			childMu.Unlock()
			// Role-queue messages routed before the kill, and left to route.
			left := waitingInRoleQueues(t, p, roles)
			f.routingAtKill = append(f.routingAtKill, [2]int{before + burst - left, left})
			f.daemonKills++
			send(burst) // sent while the daemon is down
			startDaemon()
			continue
		}
		if len(ids) < n && len(ids)-done < window {
			send(burst)
		}
		time.Sleep(20 * time.Millisecond) // the daemon is another process: poll its files
	}
	f.wall = time.Since(start)
	stopKillerOnce()

	if _, err := control.Call(p.layout, control.Request{Op: control.OpStop, Timeout: 5 * time.Second}, waitLimit); err != nil {
		t.Errorf("stop the daemon: %v", err)
	}
	childMu.Lock()
	child.Wait()
	childMu.Unlock()
	deadlineLeft := time.Now().Add(codextest.ExitGrace)
	for _, pid := range codextest.Marked(p.mark) {
		if !codextest.WaitExit(pid, time.Until(deadlineLeft)) {
			f.procsLeft++
			t.Errorf("process left running: %d %s", pid, codextest.Cmdline(pid))
		}
	}

	outcomes, statuses := chaosOutcomes(t, store)
	f.statuses = map[string]int{}
	for _, id := range ids {
		c := outcomes[id]
		switch {
		case c == 0:
			f.lost++
			t.Errorf("message %s has no outcome; it is in %s", id, whereIs(store, id))
		case c > 1:
			f.duplicates += c - 1
			t.Errorf("message %s has %d outcomes", id, c)
		}
		if c > 0 {
			f.statuses[statuses[id]]++
		}
	}
	replies := chaosReplies(t, store)
	for _, id := range ids {
		if from[id] != "human" {
			f.fromAgents++
		}
		want := 0
		if outcomes[id] > 0 && (from[id] != "human" || statuses[id] != inbox.StatusCancelled) {
			want = 1 // every sender hears of every outcome; the human not of what it cancelled
		}
		got := replies[from[id]][id]
		switch {
		case got < want:
			f.repliesLost++
			t.Errorf("message %s from %s (%s) has no reply", id, from[id], statuses[id])
		case got > want:
			f.repliesDuplicate += got - want
			t.Errorf("message %s from %s (%s) has %d replies, want %d", id, from[id], statuses[id], got, want)
		}
	}
	runs := executions(t, p.fakeLog)
	for _, id := range ids {
		f.executions += runs[id]
		f.maxExecutions = max(f.maxExecutions, runs[id])
	}
	t.Logf("chaos: %s", f)
	fmt.Println(f.benchLine())
}

// childrenOf returns the live child processes of pid: a daemon's shims.
// (A process a shim forked is not among them: before it execs the worker
// it looks like the shim, with the shim's command line and environment.)
func childrenOf(pid int) []int {
	if pid <= 0 {
		return nil
	}
	// Each thread lists the children it forked.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil && codextest.Alive(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// whereIs names the boxes and directories that hold message id.
func whereIs(store *inbox.Store, id string) string {
	names, _ := store.Boxes()
	var at []string
	for _, name := range names {
		b, err := store.Box(name)
		if err != nil {
			continue
		}
		if _, where, err := b.Get(id); err == nil {
			at = append(at, name+"/"+where)
		}
	}
	if len(at) == 0 {
		return "no box"
	}
	return strings.Join(at, ", ")
}

// countDone counts the outcome files in every box's done/.
func countDone(t *testing.T, p *testProject) int {
	t.Helper()
	boxes, err := os.ReadDir(p.layout.Inboxes())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range boxes {
		if b.Name() == "human" {
			continue // the agents' replies to the sender
		}
		es, err := os.ReadDir(filepath.Join(p.layout.Inboxes(), b.Name(), "done"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".json") && !strings.HasSuffix(e.Name(), ".reply.json") {
				n++
			}
		}
	}
	return n
}

// waitingInRoleQueues counts the messages in the role queues' new/.
func waitingInRoleQueues(t *testing.T, p *testProject, roles []string) int {
	t.Helper()
	n := 0
	for _, r := range roles {
		es, err := os.ReadDir(filepath.Join(p.layout.Inboxes(), r, "new"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		n += len(es)
	}
	return n
}

// chaosOutcomes reads every box's done/ and returns how many outcomes each
// message id has and the status of its (last read) outcome.
func chaosOutcomes(t *testing.T, store *inbox.Store) (map[string]int, map[string]string) {
	t.Helper()
	names, err := store.Boxes()
	if err != nil {
		t.Fatal(err)
	}
	count, status := map[string]int{}, map[string]string{}
	for _, name := range names {
		b, err := store.Box(name)
		if err != nil {
			t.Fatal(err)
		}
		done, err := b.Done(0)
		if err != nil {
			t.Fatalf("box %s: %v", name, err)
		}
		for _, m := range done {
			count[m.ID]++
			if m.Outcome != nil {
				status[m.ID] = m.Outcome.Status
				if m.Outcome.Status != inbox.StatusCompleted {
					t.Logf("%s %s in %s after %d attempts: %s", m.ID, m.Outcome.Status, name, m.Attempt, m.Outcome.Error)
				}
			}
		}
	}
	return count, status
}

// chaosReplies counts the replies in every box (new/, cur/ and done/): per
// box, how many answer each message id.
func chaosReplies(t *testing.T, store *inbox.Store) map[string]map[string]int {
	t.Helper()
	names, err := store.Boxes()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, name := range names {
		b, err := store.Box(name)
		if err != nil {
			t.Fatal(err)
		}
		msgs, errs := b.Pending()
		cur, cerrs := b.InFlight()
		done, err := b.Done(0)
		if len(errs)+len(cerrs) > 0 || err != nil {
			t.Fatalf("box %s: %v %v %v", name, errs, cerrs, err)
		}
		out[name] = map[string]int{}
		for _, m := range append(append(msgs, cur...), done...) {
			if m.InReplyTo != "" {
				out[name][m.InReplyTo]++
			}
		}
	}
	return out
}

var executionRE = regexp.MustCompile(`batty message (\S+) `)

// executions counts the fake worker's runs of each message id from its log.
func executions(t *testing.T, logPath string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, m := range executionRE.FindAllStringSubmatch(string(b), -1) {
		runs[m[1]]++
	}
	return runs
}

// The chaos figures come out as one benchmark-format line for
// scripts/bench.sh: the name, one iteration, the wall time in ns/op, then
// each figure with its unit.
func TestChaosBenchLine(t *testing.T) {
	f := chaosFigures{messages: 1000, daemonKills: 3, shimKills: 120, lost: 0, duplicates: 0,
		executions: 1061, maxExecutions: 4, procsLeft: 0, wall: 20123 * time.Millisecond}
	want := "BenchmarkChaos\t1\t20123000000 ns/op\t1000 messages\t3 daemon-kills\t120 shim-kills\t0 lost\t0 duplicates\t0 replies-lost\t0 replies-duplicate\t1061 executions\t4 max-executions\t0 procs-left\t20.1 wall-s"
	if got := f.benchLine(); got != want {
		t.Fatalf("benchLine\n got %q\nwant %q", got, want)
	}
}

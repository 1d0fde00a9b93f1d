package fanout

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// Job is one run of `batty fanout` once its command line and files have
// been checked: the rows, where they are recorded, the engine's options,
// the workers and the hosts they run on, and where its progress goes. The
// command parses flags and wires signals; Run does the rest.
type Job struct {
	// Engine is the run's options. Run sets its NewWorker and Log (from
	// Workers and Log) and shows its snapshots on Progress (an
	// Engine.Progress of its own is told them too); it closes Store.
	Engine Options
	// Output is the output file's name, for the summary line.
	Output string
	// Workers start the job's shims; Run adds the hosts made ready.
	Workers ShimWorkers
	// Hosts are the hosts of --hosts, in its order (a zero team.Host is
	// this machine); none: every worker here. HostSetup readies them.
	Hosts     []team.Host
	HostSetup HostSetup
	// Progress shows the job's progress and, at the end, its summary.
	Progress *Progress
	// Interrupts are the signals that stop the job: the first stops
	// starting rows (running ones get Engine.Grace to finish), the second
	// stops the running ones at once. Nil: none.
	Interrupts <-chan os.Signal
	// Notes gets a line per interrupt and per host left out (the
	// command's stderr).
	Notes io.Writer
	// Log is the job's log (nil: none).
	Log hclog.Logger
	// Shared, when set, runs the rows of the workers here as threads of
	// shared app-servers, one per account (StartShared), started before
	// the first row and ended after the last worker. When they cannot
	// start, Notes says why and those workers run codex exec instead.
	Shared *SharedSetup
}

// Run readies the hosts (when Hosts names any), runs the job with the
// progress display, closes the store and writes the summary. It returns
// the Summary (meaningful when the engine ran); an error means the job
// could not run to its end (no host ready, the store or engine failed).
// Ending ctx, or the first of Interrupts, stops starting rows and
// readying hosts; the second stops the running rows at once. It blocks
// until every worker has exited.
func (j Job) Run(ctx context.Context) (Summary, error) {
	log := j.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kill := make(chan struct{})
	sigDone := make(chan struct{})
	defer close(sigDone)
	go func() {
		n := 0
		for {
			select {
			case s := <-j.Interrupts:
				n++
				if n == 1 {
					fmt.Fprintf(j.Notes, "\nbatty fanout: %s: no more rows start; running rows get %s to finish (again to stop them now)\n", s, cmp.Or(j.Engine.Grace, DefaultGrace))
					cancel()
				} else if n == 2 {
					fmt.Fprintf(j.Notes, "\nbatty fanout: %s: stopping the running rows now\n", s)
					close(kill)
				}
			case <-sigDone:
				return
			}
		}
	}()
	store := j.Engine.Store
	workers := j.Workers
	if len(j.Hosts) > 0 {
		ready, err := j.prepareHosts(ctx)
		defer func() {
			if err := j.HostSetup.Close(j.Hosts); err != nil {
				log.Warn("Closing the connection to a host", "error", err)
			}
		}()
		if err != nil {
			store.Close()
			return Summary{}, err
		}
		workers.Hosts = ready
	}
	runtime := runtimeOf(workers)
	if j.Shared != nil && local(workers) {
		sv, err := StartShared(ctx, *j.Shared)
		if ctx.Err() != nil {
			if sv != nil {
				sv.Close()
			}
			store.Close()
			return Summary{}, fmt.Errorf("interrupted while the shared app-server started; no row started")
		}
		if err != nil {
			fmt.Fprintf(j.Notes, "batty fanout: no shared app-server (%v); the rows run on codex exec\n", err)
			workers = withExec(workers)
			runtime = runtimeOf(workers)
		} else {
			defer func() {
				if err := sv.Close(); err != nil {
					log.Warn("Closing the shared app-servers", "error", err)
				}
			}()
			workers.Shared = sv
			runtime = RuntimeShared
			if slices.ContainsFunc(workers.Hosts, func(h WorkerHost) bool { return h.Name() != "" }) {
				runtime = RuntimeMixed // the other hosts' workers run their own
			}
			log.Info("Shared app-servers ready", "pids", sv.Pids())
		}
	}
	o := j.Engine
	o.NewWorker, o.Log = workers.New, log
	if also := o.Progress; also != nil {
		o.Progress = func(s Snapshot) { j.Progress.Update(s); also(s) }
	} else {
		o.Progress = j.Progress.Update
	}
	progCtx, progStop := context.WithCancel(context.Background())
	progDone := make(chan struct{})
	go func() { defer close(progDone); j.Progress.Run(progCtx) }()
	sum, runErr := Run(ctx, kill, o)
	progStop()
	<-progDone
	closeErr := store.Close()
	sum.Runtime = runtime
	j.Progress.Final(sum, j.Output)
	if runErr != nil {
		return sum, runErr
	}
	return sum, closeErr
}

// prepareHosts installs batty on the job's hosts and checks their Codex
// (HostSetup.Prepare), and returns the hosts ready. A host that is not
// ready is left out, with one line on Notes saying why and where the rows
// go instead; when none is ready, the error names each host's problem and
// its fix. It blocks for the hosts; ctx cuts it short.
func (j Job) prepareHosts(ctx context.Context) ([]WorkerHost, error) {
	ready, probs := j.HostSetup.Prepare(ctx, j.Hosts)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted while the hosts were made ready; no row started")
	}
	if len(ready) == 0 {
		var lines []string
		for _, p := range probs {
			lines = append(lines, fmt.Sprintf("host %s: %s\n  fix: %s", p.Host, p.Problem.Detail, p.Problem.Fix))
		}
		return nil, fmt.Errorf("no host can run the rows:\n%s", strings.Join(lines, "\n"))
	}
	names := make([]string, len(ready))
	for i, h := range ready {
		names[i] = cmp.Or(h.Name(), team.LocalHost)
	}
	for _, p := range probs {
		fmt.Fprintf(j.Notes, "batty fanout: host %s: %s (fix: %s); its workers are not used: rows go to %s\n", p.Host, p.Problem.Detail, p.Problem.Fix, strings.Join(names, ", "))
	}
	return ready, nil
}

// The runtimes a job's rows run on, for its summary line.
const (
	RuntimeShared = "app-server (one shared codex app-server per account)"
	RuntimeExec   = "exec (one codex exec per row)"
	RuntimeOwn    = "app-server (one codex app-server per worker)"
	RuntimeMixed  = "mixed (see --runtime)"
)

// runtimeOf names the runtime w's workers run on without shared
// app-servers. Pure.
func runtimeOf(w ShimWorkers) string {
	cfgs := []shimconfig.Config{w.Config}
	if len(w.Hosts) > 0 {
		cfgs = cfgs[:0]
		for _, h := range w.Hosts {
			cfgs = append(cfgs, h.Config)
		}
	}
	name := ""
	for i, c := range cfgs {
		r := RuntimeExec
		if c.Runtime == shimconfig.RuntimeAppServer {
			r = RuntimeOwn
		}
		if i > 0 && r != name {
			return RuntimeMixed
		}
		name = r
	}
	return name
}

// local reports whether some of w's workers run here. Pure.
func local(w ShimWorkers) bool {
	return len(w.Hosts) == 0 || slices.ContainsFunc(w.Hosts, func(h WorkerHost) bool { return h.Name() == "" })
}

// withExec is w with its workers here on codex exec. Pure.
func withExec(w ShimWorkers) ShimWorkers {
	w.Config.Runtime = shimconfig.RuntimeExec
	w.Hosts = slices.Clone(w.Hosts)
	for i := range w.Hosts {
		if w.Hosts[i].Name() == "" {
			w.Hosts[i].Config.Runtime = shimconfig.RuntimeExec
		}
	}
	return w
}

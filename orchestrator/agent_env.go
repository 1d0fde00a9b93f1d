package orchestrator

import (
	"context"

	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/slots"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/usage"
)

// agentEnv is what an agent reaches beyond its own rooms: it emits
// events, reads its options, the team file and the project's layout,
// uses the books made before it (the dispatch gate, the budgets, the
// usage ledger, the inboxes), and asks the daemon for the rest through
// agentCrew. The daemon builds it (newAgent); an agent never holds the
// daemon. Every field is safe from any goroutine and never changes.
type agentEnv struct {
	emit    func(eventlog.Event) // appends to the event log (eventlog.Log.Append)
	opts    *Options
	cfg     *team.Config
	layout  project.Layout
	gate    *dispatch.Gate
	budgets *budgetBook
	ledger  *usage.Ledger
	store   *inbox.Store
	journal *searchindex.Keeper // the turn journal and its index
	crew    agentCrew
}

// agentCrew is what an agent asks of the daemon, beyond what its account
// room asks (crew): the other agents' inboxes, where its shim starts and
// how, the turn slots, the merge queue and the team's pause. *Daemon
// implements it; every method is safe from any goroutine and never
// blocks on another agent.
type agentCrew interface {
	crew
	// boxOf is the inbox of agent name, nil when no agent has that name.
	boxOf(name string) *inbox.Box
	// roleBoxes are the inboxes of role's instances.
	roleBoxes(role string) []*inbox.Box
	// isAgent reports whether name is one of the team's agents.
	isAgent(name string) bool
	// replyBox is the box a reply to name goes to (an agent's, the
	// human's, a role queue's).
	replyBox(name string) (*inbox.Box, error)
	// queues reports whether role has a queue its instances share (it is
	// routed by the daemon).
	queues(role string) bool
	// outcomeRecorded tells the schedules how message id ended.
	outcomeRecorded(id string, o inbox.Outcome)
	// budgetTurn counts a finished turn against the budgets.
	budgetTurn(t usage.Turn)
	// pause pauses the team's dispatch (a login is needed).
	pause(kind, reason string) bool
	// landed tells the merge queue that work of an agent may have come
	// (a no-op without one).
	landed()
	// turnSlots is the pool of turn slots.
	turnSlots() *slots.Pool

	// healthFor is the health of how agent def runs Codex where it
	// runs (at) with CODEX_HOME home.
	healthFor(def team.Agent, at reach, home string) *health
	// deniedDirs are the directories every agent's profile denies.
	deniedDirs() []string
	// shimEnviron is the environment every shim starts with.
	shimEnviron() []string
	// placeShared points c at the shared app-server of agent def on on,
	// when it runs on one.
	placeShared(def team.Agent, on host.Host, c *shimconfig.Config)
	// startWorker starts a worker of o; it blocks for the handshake.
	startWorker(ctx context.Context, o shimclient.SpawnOptions) (Worker, error)
	// subreaper is the daemon's reaper, nil unless it is a subreaper.
	subreaper() *reap.Reaper
	// killOrphans kills what shims left behind (a subreaper only).
	killOrphans(why string)
}

var _ agentCrew = (*Daemon)(nil)

// boxOf is the inbox of agent name, nil when no agent has that name.
func (d *Daemon) boxOf(name string) *inbox.Box {
	if a := d.byName[name]; a != nil {
		return a.box
	}
	return nil
}

// roleBoxes are the inboxes of role's instances.
func (d *Daemon) roleBoxes(role string) []*inbox.Box {
	var boxes []*inbox.Box
	for _, o := range d.agents {
		if o.def.Role == role {
			boxes = append(boxes, o.box)
		}
	}
	return boxes
}

// queues reports whether role has a queue its instances share.
func (d *Daemon) queues(role string) bool {
	_, ok := d.roles[role]
	return ok
}

// landed pokes the merge queue, when there is one.
func (d *Daemon) landed() {
	if d.lander != nil {
		d.lander.poke()
	}
}

// turnSlots is the pool of turn slots.
func (d *Daemon) turnSlots() *slots.Pool { return d.slots }

// subreaper is the daemon's reaper, nil unless it is a subreaper.
func (d *Daemon) subreaper() *reap.Reaper { return d.reaper }

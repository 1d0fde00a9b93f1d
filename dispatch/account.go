package dispatch

import (
	"slices"
	"sync"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/team"
)

// Account is the agents whose usage counts against one account.
type account struct {
	key, home string
	name      string                // the team's name of the account ("" when the team names none)
	agents    []string              // the agents placed on it, in the team's agent order
	pause     *project.AccountPause // nil while the account is open
	probing   bool                  // ProbeAt has come: one probe turn may go
	prober    string                // the agent that may send it ("" = any)
	probeMsg  string                // the probe in flight ("" = none yet)
	usage     *project.AccountUsage // the last rate-limit snapshot, nil before one
	// usageSaved is when usage was last written (see QuotaBook.Usage).
	usageSaved time.Time
}

// QuotaBook holds every account's pause: which agents may start a turn,
// the one probe turn of an account whose pause has run out, and the
// back-off when it hits the limit again. Safe for concurrent use; every
// change is persisted (atomically, never through a link) before the
// method returns, and the daemon's goroutine is told on changed to re-arm
// its probe timer.
type QuotaBook struct {
	mu       sync.Mutex
	policy   retry.QuotaPolicy
	jitter   func() time.Duration
	layout   project.Layout
	save     func(l project.Layout, name string, v any) error
	accounts []*account // in the team's agent order
	byAgent  map[string]*account
	byKey    map[string]*account
	// choices are the accounts of each agent that has several (a role's
	// accounts), in order of preference; the agent is placed on one of
	// them (byAgent).
	choices map[string][]*account
	order   []string      // the agents, in the team's order
	warnPct float64       // quota.warn_pct (0: no warning)
	changed chan struct{} // buffered(1)
}

// NewQuotaBook groups the agents of cfg into accounts by the team's quota
// scope (env is the shims' environment, for CODEX_HOME and HOME) and loads
// the pauses, placements and rate-limit snapshots persisted in l. An agent
// whose role lists accounts (scope account) may run on any of them: it is
// placed where it last ran, then moved as Rebalance says. A pause of an
// account no agent has (any more, or in this environment) is dropped,
// unless keepOthers (status of a stopped team, read with the CLI's
// environment), which lists it as an Account without agents.
func NewQuotaBook(cfg *team.Config, l project.Layout, env []string, policy retry.QuotaPolicy, jitter func() time.Duration, keepOthers bool) (*QuotaBook, error) {
	b := &QuotaBook{policy: policy, jitter: jitter, layout: l, save: project.SaveJSON,
		byAgent: map[string]*account{}, byKey: map[string]*account{}, choices: map[string][]*account{},
		warnPct: float64(cfg.Quota.WarnPct), changed: make(chan struct{}, 1)}
	perAccount := cfg.Quota.Scope == team.QuotaScopeAccount || cfg.Quota.Scope == ""
	named := map[string]string{} // home → account name
	for _, a := range cfg.Accounts {
		named[a.CodexHome] = a.Name
	}
	var st project.QuotaState
	if err := project.LoadJSON(l, project.QuotaName, &st); err != nil {
		return nil, err
	}
	for _, a := range cfg.Agents() {
		var accs []*account
		if perAccount && len(a.Accounts) > 0 {
			for _, ta := range a.Accounts {
				accs = append(accs, b.ensure(ta.CodexHome, ta.CodexHome, ta.Name))
			}
		} else {
			home := AgentHome(a, env)
			key, h := AccountKey(cfg.Quota.Scope, a.Name, home), ""
			if perAccount {
				h = home
			}
			accs = append(accs, b.ensure(key, h, named[home]))
		}
		at := accs[0]
		if len(accs) > 1 {
			b.choices[a.Name] = accs
			if i := slices.IndexFunc(accs, func(acc *account) bool { return acc.key == st.Placed[a.Name] }); i >= 0 {
				at = accs[i]
			}
		}
		at.agents = append(at.agents, a.Name)
		b.byAgent[a.Name] = at
		b.order = append(b.order, a.Name)
	}
	for _, p := range st.Paused {
		p := p
		if acc := b.byKey[p.Account]; acc != nil {
			acc.pause = &p
		} else if keepOthers {
			acc := &account{key: p.Account, pause: &p}
			b.byKey[p.Account] = acc
			b.accounts = append(b.accounts, acc)
		}
	}
	for _, u := range st.Usage {
		u := u
		if acc := b.byKey[u.Account]; acc != nil {
			acc.usage = &u
		}
	}
	b.rebalance()
	return b, nil
}

// accountFor is the account of key when it is agent's (the one it is
// placed on, or one of its choices), else the one agent is placed on (nil
// for an unknown agent); b.mu is held.
func (b *QuotaBook) accountFor(agent, key string) *account {
	acc := b.byAgent[agent]
	if k := b.byKey[key]; k != nil && (k == acc || slices.Contains(b.choices[agent], k)) {
		acc = k
	}
	return acc
}

// ensure returns the account of key, made (home, name) when new.
func (b *QuotaBook) ensure(key, home, name string) *account {
	if acc := b.byKey[key]; acc != nil {
		return acc
	}
	acc := &account{key: key, home: home, name: name}
	b.byKey[key] = acc
	b.accounts = append(b.accounts, acc)
	return acc
}

// persist writes the paused accounts, the placements and the rate-limit
// snapshots; b.mu is held.
func (b *QuotaBook) persist() error {
	st := project.QuotaState{Paused: []project.AccountPause{}}
	for _, acc := range b.accounts {
		if acc.pause != nil {
			st.Paused = append(st.Paused, *acc.pause)
		}
		if acc.usage != nil {
			st.Usage = append(st.Usage, *acc.usage)
		}
	}
	for agent, accs := range b.choices {
		if at := b.byAgent[agent]; at != accs[0] {
			if st.Placed == nil {
				st.Placed = map[string]string{}
			}
			st.Placed[agent] = at.key
		}
	}
	return b.save(b.layout, project.QuotaName, st)
}

// Changed is told (buffered, coalesced) every time a pause is persisted:
// the daemon re-arms its probe timer.
func (b *QuotaBook) Changed() <-chan struct{} { return b.changed }

func (b *QuotaBook) notify() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// MayTry reports whether agent may look for a message to run: its account
// is open, or its pause has run out, no probe is in flight and the probe
// is the agent's (or anyone's) to send.
func (b *QuotaBook) MayTry(agent string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.byAgent[agent]
	return acc == nil || acc.pause == nil || (acc.probing && acc.probeMsg == "" && (acc.prober == "" || acc.prober == agent))
}

// Paused reports whether agent's account is paused (probing or not).
func (b *QuotaBook) Paused(agent string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.byAgent[agent]
	return acc != nil && acc.pause != nil
}

// Admit asks whether agent may start message id now. ok is true when its
// Account is open, or when id becomes the account's one probe (probe true);
// a probe that is not sent after all must be given back with release.
func (b *QuotaBook) Admit(agent, id string) (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.byAgent[agent]
	switch {
	case acc == nil || acc.pause == nil:
		return true, false
	case acc.probing && acc.probeMsg == "" && (acc.prober == "" || acc.prober == agent):
		acc.prober, acc.probeMsg = agent, id
		return true, true
	}
	return false, false
}

// Release gives back the probe id that agent did not send (its claim
// failed), or the probe designation of an agent that has nothing to send
// (id ""): any agent of the account may send the probe then. It returns
// the account's agents to wake, nil when nothing changed.
func (b *QuotaBook) Release(agent, id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.byAgent[agent]
	if acc == nil || !acc.probing || acc.prober != agent || acc.probeMsg != id {
		return nil
	}
	acc.prober, acc.probeMsg = "", ""
	return slices.Clone(acc.agents)
}

// QuotaHit is what a usage limit changed.
type QuotaHit struct {
	// Alert is true when it paused an open account: the one alert.
	Alert bool
	// ProbeFailed is true when it was the account's probe.
	ProbeFailed bool
	Pause       project.AccountPause
	// Agents are the agents left on the account, which wait for it.
	Agents []string
	// Moves are the agents that go on on another account.
	Moves []Move
}

// Hit records that agent's message id, run on the account of key ("" =
// the one agent is placed on), hit a usage limit (reason is codex's
// message, resetBy its reset time or zero) at now. An open account pauses
// until nextProbe; the account's probe backs off; any other hit of a
// Paused account only moves its probe later when codex names a later reset
// time. The agents of a paused account that have another account open
// move there (Moves). The new state is persisted before hit returns.
func (b *QuotaBook) Hit(agent, key, id, reason string, resetBy, now time.Time) (QuotaHit, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.accountFor(agent, key)
	if acc == nil {
		return QuotaHit{}, nil
	}
	h := QuotaHit{}
	switch {
	case acc.pause == nil:
		acc.pause = &project.AccountPause{Account: acc.key, Reason: reason, Agent: agent, Since: now.UTC(), ResetBy: resetBy.UTC(),
			ProbeAt: b.policy.NextProbe(now, resetBy, 0, b.jitter()).UTC()}
		acc.probing, acc.prober, acc.probeMsg = false, "", ""
		h.Alert = true
	case acc.probing && acc.probeMsg == id && acc.prober == agent:
		p := acc.pause
		p.Probes++
		p.Reason, p.ResetBy = reason, resetBy.UTC()
		p.ProbeAt = b.policy.NextProbe(now, resetBy, p.Probes, b.jitter()).UTC()
		acc.probing, acc.prober, acc.probeMsg = false, "", ""
		h.ProbeFailed = true
	default:
		p := acc.pause
		if resetBy.IsZero() || !resetBy.After(p.ResetBy) {
			h.Pause, h.Agents = *p, slices.Clone(acc.agents)
			return h, nil
		}
		p.ResetBy = resetBy.UTC()
		if at := b.policy.NextProbe(now, resetBy, p.Probes, b.jitter()); !acc.probing && at.After(p.ProbeAt) {
			p.ProbeAt = at.UTC()
		}
	}
	h.Moves = b.rebalance()
	h.Pause, h.Agents = *acc.pause, slices.Clone(acc.agents)
	err := b.persist()
	b.notify()
	return h, err
}

// ProbeEnded tells the book how the turn of agent's message id ended
// (completed or not). When it was the account's probe: completed opens the
// account, and the released agents are returned with resumed true, with
// the moves of the agents that prefer it and now return to it;
// anything else but a usage limit (handled by hit) tells nothing about the
// limit, so the probe may go again, from any agent of the account (their
// names are returned to wake them).
func (b *QuotaBook) ProbeEnded(agent, id string, completed bool) (wake []string, resumed bool, moves []Move, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.byAgent[agent]
	if acc == nil || acc.pause == nil || !acc.probing || acc.probeMsg != id || acc.prober != agent {
		return nil, false, nil, nil
	}
	if !completed {
		acc.prober, acc.probeMsg = "", ""
		return slices.Clone(acc.agents), false, nil, nil
	}
	acc.pause, acc.probing, acc.prober, acc.probeMsg = nil, false, "", ""
	moves = b.rebalance()
	err = b.persist()
	b.notify()
	return slices.Clone(acc.agents), true, moves, err
}

// Due returns the accounts whose pause has run out by now and that have no
// probe going yet, by key.
func (b *QuotaBook) Due(now time.Time) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for _, acc := range b.accounts {
		if acc.pause != nil && !acc.probing && !acc.pause.ProbeAt.After(now) {
			keys = append(keys, acc.key)
		}
	}
	return keys
}

// StartProbe lets prober ("" = any agent of the account, or any agent
// that prefers it) send the probe of account key, and returns the moves of
// the agents that go there for it (see Rebalance): an account whose pause
// ran out is where agents that prefer it return. Moves are persisted.
func (b *QuotaBook) StartProbe(key, prober string) ([]Move, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.byKey[key]
	if acc == nil || acc.pause == nil {
		return nil, nil
	}
	acc.probing, acc.prober, acc.probeMsg = true, prober, ""
	moves := b.rebalance()
	if len(moves) == 0 {
		return nil, nil
	}
	return moves, b.persist()
}

// Account returns the agents and pause of account key.
func (b *QuotaBook) Account(key string) (agents []string, p project.AccountPause, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.byKey[key]
	if acc == nil || acc.pause == nil {
		return nil, project.AccountPause{}, false
	}
	return slices.Clone(acc.agents), *acc.pause, true
}

// NextWake returns the earliest ProbeAt of a paused account with no probe
// going (zero: none).
func (b *QuotaBook) NextWake() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var at time.Time
	for _, acc := range b.accounts {
		if acc.pause != nil && !acc.probing && (at.IsZero() || acc.pause.ProbeAt.Before(at)) {
			at = acc.pause.ProbeAt
		}
	}
	return at
}

// ResumeAll opens every account (`batty resume`) and returns the keys it
// opened and the agents that return to the accounts they prefer.
func (b *QuotaBook) ResumeAll() ([]string, []Move, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for _, acc := range b.accounts {
		if acc.pause != nil {
			keys = append(keys, acc.key)
			acc.pause, acc.probing, acc.prober, acc.probeMsg = nil, false, "", ""
		}
	}
	if keys == nil {
		return nil, nil, nil
	}
	moves := b.rebalance()
	err := b.persist()
	b.notify()
	return keys, moves, err
}

// AccountView is what status shows of one account.
type AccountView struct {
	Key, Home string
	Name      string // the team's name of the account, "" when none
	// Usage is the last rate-limit snapshot, nil before one.
	Usage    *project.AccountUsage
	Agents   []string
	Pause    *project.AccountPause // nil while the account is open
	Probing  bool
	ProbeMsg string
}

// Views returns every account, in the team's agent order.
func (b *QuotaBook) Views() []AccountView {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]AccountView, 0, len(b.accounts))
	for _, acc := range b.accounts {
		v := AccountView{Key: acc.key, Home: acc.home, Name: acc.name, Agents: slices.Clone(acc.agents), Probing: acc.probing, ProbeMsg: acc.probeMsg}
		if acc.usage != nil {
			u := *acc.usage
			u.Windows = slices.Clone(u.Windows)
			v.Usage = &u
		}
		if acc.pause != nil {
			p := *acc.pause
			v.Pause = &p
		}
		out = append(out, v)
	}
	return out
}

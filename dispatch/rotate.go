package dispatch

import (
	"slices"
)

// Move is one agent moved from one account to another: by a usage limit
// of the account it ran on, or back to an account it prefers once that
// one is open again. Keys are account keys (CODEX_HOME paths).
type Move struct {
	Agent    string
	From, To string
	// FromName and ToName are the accounts' names in the team file.
	FromName, ToName string
}

// choice is what placement needs to know of one of an agent's accounts.
type choice struct {
	open  bool // not paused
	probe bool // paused, its probe may go, and the agent may send it
}

// placement returns the index of the account an agent with these accounts
// (in order of preference) should run on, now on cur: the first that is
// open or whose probe the agent may send (its pause ran out: going there is
// how an agent returns to an account it prefers); when there is none, cur (the agent waits
// where it is, for that account's reset). It is a pure function.
func placement(cs []choice, cur int) int {
	for i, c := range cs {
		if c.open || c.probe {
			return i
		}
	}
	return cur
}

// rebalance places every agent with several accounts as placement says
// and returns the moves, in the team's agent order; b.mu is held. It does
// not persist.
func (b *QuotaBook) rebalance() []Move {
	var moves []Move
	for _, agent := range b.order {
		accs := b.choices[agent]
		if len(accs) < 2 {
			continue
		}
		cur := b.byAgent[agent]
		cs := make([]choice, len(accs))
		at := 0
		for i, acc := range accs {
			cs[i] = choice{open: acc.pause == nil, probe: acc.pause != nil && acc.probing && (acc.prober == agent || acc.prober == "")}
			if acc == cur {
				at = i
			}
		}
		if to := accs[placement(cs, at)]; to != cur {
			b.move(agent, cur, to)
			moves = append(moves, Move{Agent: agent, From: cur.key, To: to.key, FromName: cur.name, ToName: to.name})
		}
	}
	return moves
}

// move places agent on to, off from; b.mu is held.
func (b *QuotaBook) move(agent string, from, to *account) {
	from.agents = slices.DeleteFunc(from.agents, func(n string) bool { return n == agent })
	to.agents = append(to.agents, agent)
	slices.SortFunc(to.agents, func(x, y string) int {
		return slices.Index(b.order, x) - slices.Index(b.order, y)
	})
	b.byAgent[agent] = to
}

// HomeOf returns the CODEX_HOME of the account agent is placed on, and
// whether the book places it (an agent whose role lists accounts): its
// shim is to run there.
func (b *QuotaBook) HomeOf(agent string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.choices[agent]; !ok {
		return "", false
	}
	return b.byAgent[agent].home, true
}

// NameOf returns the team's name of the account agent is placed on ("" when
// the team names none).
func (b *QuotaBook) NameOf(agent string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if acc := b.byAgent[agent]; acc != nil {
		return acc.name
	}
	return ""
}

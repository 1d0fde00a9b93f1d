package cockpit

import "fmt"

// Pane counts of the layout: the first window holds the orchestrator feed
// and up to FirstWindowAgents agents; every further window up to
// WindowAgents agents, tiled.
const (
	FirstWindowAgents = 4
	WindowAgents      = 6
)

// Window is one planned tmux window.
type Window struct {
	// Name is the window name shown in the status line.
	Name string
	// Feed reports whether the window holds the orchestrator feed (as its
	// first pane, on the left).
	Feed bool
	// Agents are the agents whose panes the window holds, in team order.
	Agents []string
	// Layout is the tmux layout applied once the panes exist.
	Layout string
}

// Plan lays out a team of agents: the first window has the orchestrator
// feed on the left and the first agents stacked on the right (side by side
// with a single agent); the other agents follow in tiled windows of at most
// WindowAgents panes, named after the range of agents they hold. Every
// agent appears exactly once, in order. Pure.
func Plan(agents []string) []Window {
	first := agents[:min(len(agents), FirstWindowAgents)]
	w := Window{Name: "team", Feed: true, Agents: first, Layout: "main-vertical"}
	if len(first) <= 1 {
		w.Layout = "even-horizontal"
	}
	out := []Window{w}
	for i := len(first); i < len(agents); i += WindowAgents {
		end := min(i+WindowAgents, len(agents))
		name := fmt.Sprintf("agents %d-%d", i+1, end)
		if end == i+1 {
			name = fmt.Sprintf("agent %d", i+1)
		}
		out = append(out, Window{Name: name, Agents: agents[i:end], Layout: "tiled"})
	}
	return out
}

package cockpit

import "fmt"

// Pane counts of the layout on a large terminal: the first window holds
// the orchestrator feed and up to FirstWindowAgents agents; every further
// window up to WindowAgents agents, tiled. Smaller terminals get fewer
// panes per window (see PlanFor).
const (
	FirstWindowAgents = 4
	WindowAgents      = 6
)

// The least size of a readable pane, in cells: a pane is never planned
// narrower or shorter (but on a terminal smaller than one pane).
const (
	MinPaneWidth  = 60
	MinPaneHeight = 8
)

// Size is a terminal's size in cells.
type Size struct{ Width, Height int }

// DetachedSize is the size the session has before any client attaches.
var DetachedSize = Size{Width: 240, Height: 64}

// Window is one planned tmux window.
type Window struct {
	// Name is the window name shown in the status line.
	Name string
	// Feed reports whether the window holds the orchestrator feed (as its
	// first pane, on the left or on top).
	Feed bool
	// Agents are the agents whose panes the window holds, in team order.
	Agents []string
	// Layout is the tmux layout applied once the panes exist.
	Layout string
	// MainWidth is the width of the feed pane in columns with the
	// main-vertical layout; 0 keeps tmux's main-pane-width.
	MainWidth int
}

// Plan lays out a team of agents for the session's size before any client
// attaches (DetachedSize). Pure.
func Plan(agents []string) []Window { return PlanFor(agents, DetachedSize) }

// PlanFor lays out a team of agents for a terminal of size term, so that
// every pane is at least MinPaneWidth × MinPaneHeight where the terminal
// allows: the first window has the orchestrator feed on the left and the
// first agents stacked on the right (side by side with a single agent), or,
// on a terminal too narrow for two columns, the feed on top with the agents
// below; the other agents follow in windows of as many panes as fit (at
// most WindowAgents), named after the range of agents they hold. Every
// agent appears exactly once, in order. Pure.
func PlanFor(agents []string, term Size) []Window {
	width := max(term.Width, 1)
	height := max(term.Height-1, 1) // the status line
	// A pane takes its border line (the title) besides its own lines.
	stack := max(height/(MinPaneHeight+1), 1)
	columns := max((width+1)/(MinPaneWidth+1), 1)

	w := Window{Name: "team", Feed: true}
	var first []string
	if columns >= 2 {
		first = agents[:min(len(agents), FirstWindowAgents, stack)]
		w.Layout = "main-vertical"
		w.MainWidth = min(max(width*40/100, MinPaneWidth), width-1-MinPaneWidth)
		if len(first) <= 1 {
			w.Layout, w.MainWidth = "even-horizontal", 0
		}
	} else {
		first = agents[:min(len(agents), FirstWindowAgents, stack-1)]
		w.Layout = "even-vertical"
	}
	w.Agents = first
	out := []Window{w}

	per, layout := windowPanes(stack, columns)
	for i := len(first); i < len(agents); i += per {
		end := min(i+per, len(agents))
		name := fmt.Sprintf("agents %d-%d", i+1, end)
		if end == i+1 {
			name = fmt.Sprintf("agent %d", i+1)
		}
		out = append(out, Window{Name: name, Agents: agents[i:end], Layout: layout})
	}
	return out
}

// windowPanes returns how many agent panes a window holds when stack panes
// fit above each other and columns side by side, and the layout that
// arranges them: tiled where tmux's tiled grid fits, else one column
// (even-vertical). At least one pane. Pure.
func windowPanes(stack, columns int) (int, string) {
	for n := WindowAgents; n > 1; n-- {
		if r, c := tiledGrid(n); r <= stack && c <= columns {
			return n, "tiled"
		}
		if n <= stack {
			return n, "even-vertical"
		}
	}
	return 1, "tiled"
}

// tiledGrid returns the rows and columns of tmux's tiled layout of n panes
// (layout-set.c: rows grow first, then columns, until they hold n). Pure.
func tiledGrid(n int) (rows, columns int) {
	rows, columns = 1, 1
	for rows*columns < n {
		rows++
		if rows*columns < n {
			columns++
		}
	}
	return rows, columns
}

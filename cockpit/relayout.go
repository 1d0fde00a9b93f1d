package cockpit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// layoutCmds returns the commands that name the window holding pane first
// and apply w's layout to it.
func layoutCmds(first string, w Window) [][]string {
	var cmds [][]string
	cmds = append(cmds, []string{"rename-window", "-t", first, tmuxArg(w.Name)})
	if w.MainWidth > 0 {
		cmds = append(cmds, []string{"set-option", "-w", "-t", first, "main-pane-width", strconv.Itoa(w.MainWidth)})
	}
	return append(cmds, []string{"select-layout", "-t", first, w.Layout})
}

// Relayout lays the session's panes out again for a client of size term
// (see PlanFor): when the panes per window change, it moves them between
// windows (break-pane, join-pane), keeping every pane, its process and its
// output, then applies each window's layout, and brings the client back to
// the pane that was active. Windows end in plan order, renumbered but in a
// grouped session (as an attach from inside tmux makes it). It makes
// two tmux invocations (one lists the panes, one lays them out).
func (s Server) Relayout(ctx context.Context, session string, term Size) error {
	out, err := s.Run.Run(ctx, "list-panes", "-s", "-t", "="+session, "-F",
		"#{window_id}\t#{pane_id}\t#{"+optPane+"}\t#{"+optAgent+"}\t#{&&:#{window_active},#{pane_active}}\t#{session_grouped}")
	if err != nil {
		return fmt.Errorf("list the panes of tmux session %q: %w", session, err)
	}
	var (
		feed, active string
		agents       []string
		pane         = map[string]string{} // agent → pane id
		current      [][]string            // pane ids, window by window
		lastWindow   string
		grouped      bool
	)
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			continue
		}
		grouped = grouped || f[5] == "1"
		if f[0] != lastWindow {
			current, lastWindow = append(current, nil), f[0]
		}
		current[len(current)-1] = append(current[len(current)-1], f[1])
		if f[4] == "1" {
			active = f[1]
		}
		switch f[2] {
		case "feed":
			feed = f[1]
		case "agent":
			agents = append(agents, f[3])
			pane[f[3]] = f[1]
		}
	}
	if feed == "" {
		return fmt.Errorf("relayout tmux session %q: no feed pane", session)
	}
	plan := PlanFor(agents, term)
	var want [][]string
	for _, w := range plan {
		var ids []string
		if w.Feed {
			ids = append(ids, feed)
		}
		for _, a := range w.Agents {
			ids = append(ids, pane[a])
		}
		want = append(want, ids)
	}
	cmds := relayoutCmds(session, current, want, plan, !grouped)
	if active != "" {
		cmds = append(cmds, []string{"select-window", "-t", active}, []string{"select-pane", "-t", active})
	}
	if _, err := s.Run.Run(ctx, join(cmds)...); err != nil {
		return fmt.Errorf("relayout tmux session %q: %w", session, err)
	}
	return nil
}

// relayoutCmds returns the commands that turn the windows current (pane
// ids, window by window) into want, laid out as plan says. Panes already
// grouped as wanted are not moved. With renumber, the windows are then
// numbered from the base index again (move-window -r, which crashes tmux
// 3.3 in a grouped session). Pure.
func relayoutCmds(session string, current, want [][]string, plan []Window, renumber bool) [][]string {
	var cmds [][]string
	if !slices.EqualFunc(current, want, slices.Equal) {
		end := "=" + session + ":{end}"
		for i, ids := range want {
			// Each window is built anew at the end of the session, in plan
			// order, around a placeholder pane that its first pane then
			// replaces (break-pane would move a single pane's window, which
			// tmux refuses in a grouped session); the old windows close as
			// their last pane leaves.
			cmds = append(cmds,
				[]string{"new-window", "-d", "-a", "-t", end, "-n", tmuxArg(plan[i].Name), "sleep", "60"},
				[]string{"join-pane", "-d", "-s", ids[0], "-t", end},
				[]string{"kill-pane", "-a", "-t", ids[0]})
			// Each pane joins after the one before it, keeping team order.
			for k, id := range ids[1:] {
				cmds = append(cmds,
					[]string{"select-layout", "-t", ids[0], "tiled"},
					[]string{"join-pane", "-d", "-s", id, "-t", ids[k]})
			}
		}
		if renumber {
			cmds = append(cmds, []string{"move-window", "-r", "-t", "=" + session})
		}
	}
	for i, w := range plan {
		cmds = append(cmds, layoutCmds(want[i][0], w)...)
	}
	return cmds
}

// shellJoin quotes argv for the shell (/bin/sh -c). Pure.
func shellJoin(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

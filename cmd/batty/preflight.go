package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
)

// doctorHint points from a failed check of `batty start` to `batty
// doctor`, which checks everything the team needs.
const doctorHint = "batty: `batty doctor` checks everything this team needs on this machine and its hosts, each with its fix"

// warnParked asks the running daemon for its status and prints every
// parked agent — one whose Codex cannot run — with what is wrong and how to
// fix it. `batty start` calls it once the daemon is ready: the daemon checks
// every agent's Codex before it says so. A team with parked agents still
// starts (exit 0): their messages wait until their Codex runs.
func warnParked(w io.Writer, l project.Layout) {
	resp, err := daemonClient{layout: l}.call(control.Request{Op: control.OpStatus}, 10*time.Second)
	if err != nil || resp.Status == nil {
		fmt.Fprintf(w, "batty: could not ask the daemon whether every agent's codex runs (%v); see `batty status`\n", err)
		return
	}
	if printParked(w, "batty: warning: ", *resp.Status) {
		fmt.Fprintln(w, "batty: their messages wait; batty checks again by itself, and at once on `batty resume`")
		fmt.Fprintln(w, doctorHint)
	}
}

// printParked prints one line per distinct problem of the parked agents of
// st — "<prefix>eng-1, eng-2 parked: <what is wrong> — <fix>", in full but
// made one safe line (safetext.Line: the detail may quote codex's output)
// — and reports whether there was any.
func printParked(w io.Writer, prefix string, st control.Status) bool {
	type group struct {
		names []string
		text  string
	}
	var groups []*group
	byText := map[string]*group{}
	for _, a := range st.Agents {
		if a.Parked == nil {
			continue
		}
		text := safetext.Line(a.Parked.Detail, 0)
		if fix := safetext.Line(a.Parked.Fix, 0); fix != "" {
			text += " — " + fix
		}
		g, ok := byText[text]
		if !ok {
			g = &group{text: text}
			byText[text] = g
			groups = append(groups, g)
		}
		g.names = append(g.names, a.Name)
	}
	for _, g := range groups {
		fmt.Fprintf(w, "%s%s parked: %s\n", prefix, strings.Join(g.names, ", "), g.text)
	}
	return len(groups) > 0
}

func hasParked(st control.Status) bool {
	for _, a := range st.Agents {
		if a.Parked != nil {
			return true
		}
	}
	return false
}

// announceRecheck says which parked agents `batty resume` has the daemon
// check again (nothing when none is parked).
func announceRecheck(w io.Writer, agents []string) {
	if len(agents) > 0 {
		fmt.Fprintf(w, "batty: checking the codex of %s again (parked); `batty status` shows the result\n", strings.Join(agents, ", "))
	}
}

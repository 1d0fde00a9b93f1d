package orchestrator

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/workspaces"
)

// A merge of the base that batty left in an agent's worktree for it to
// resolve (syncWorkspace) may still hold conflict markers when batty
// commits the worktree: after a turn, before a merge, or when a new
// daemon commits what an earlier run left. Every one of those commits
// refuses the same way (workspaces.Unresolved), and the daemon takes it
// the same way: the merge stays in progress with the agent's other edits,
// the agent goes on with its messages (never parked for it), and each
// message sent to it names the files that still hold markers until a
// commit succeeds.

// mergeLeft records files, the conflicted files that still hold markers
// as the last commit of the worktree found them (nil: the commit found
// none, or succeeded), for the reminder (mergeNotice); a new set is logged
// and recorded as a warning event.
func (w *worktree) mergeLeft(files []string) {
	// A host's answer names them too: as many as a commit here would.
	files = files[:min(len(files), workspaces.MaxUnresolved)]
	if slices.Equal(files, w.unresolved) {
		return
	}
	w.unresolved = slices.Clone(files)
	if len(files) == 0 {
		return
	}
	w.log.Warn("The worktree's merge still has conflict markers; it waits for the agent", "files", len(files))
	w.events(eventlog.Event{Type: eventlog.EvWarning, Agent: w.agent,
		Detail: "merge of " + w.ws.base + " into " + workspaces.Branch(w.agent) + " not committed yet: conflict markers left in " +
			nameList(files, maxEventName, maxEventNames)})
}

// mergeReminder is the notice of the messages sent to the agent while
// its worktree's merge holds conflict markers ("" when it does not).
func (w *worktree) mergeReminder() string {
	if w.ws == nil {
		return ""
	}
	return mergeNotice(w.ws.base, w.unresolved)
}

// Bounds of mergeNotice's names, in characters: each file's, and all of
// them together (the base's too): the notice fits in shim.MaxNotice.
const (
	maxNoticeName  = 40
	maxNoticeNames = 60
	maxEventName   = 200
	maxEventNames  = 2000
)

// mergeNotice reminds an agent that the merge of base in its worktree
// still has conflict markers in files (named by the agent: each cleaned
// to one line with safetext, clipped, as many as fit, the rest counted);
// "" when files is empty. It is a pure function.
func mergeNotice(base string, files []string) string {
	if len(files) == 0 {
		return ""
	}
	list := nameList(files, maxNoticeName, maxNoticeNames)
	return fmt.Sprintf("Your worktree is still merging %s; conflict markers are left in: %s. "+
		"Resolve them and remove the marker lines; batty commits the merge, with your other edits, when your turn ends.", safetext.Line(base, maxNoticeName), list)
}

// nameList lists files (named by an agent) for a message: each cleaned to
// one line with safetext and clipped to maxName characters, as many as fit
// in maxNames characters (one at least), the rest counted ("and N more").
// It is a pure function.
func nameList(files []string, maxName, maxNames int) string {
	var names []string
	used := 0
	for _, f := range files {
		n := safetext.Line(f, maxName)
		if used+utf8.RuneCountInString(n) > maxNames && len(names) > 0 {
			break
		}
		names = append(names, n)
		used += utf8.RuneCountInString(n) + 2
	}
	list := strings.Join(names, ", ")
	if more := len(files) - len(names); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return list
}

package orchestrator

import (
	"path/filepath"

	"github.com/battyhq/batty/inbox"
)

// watchedInboxes returns, for the new/ directory of every inbox the daemon
// delivers from (the agents' and the role queues'), what a watcher report
// of a change to an entry there (its base name) does: the box's index
// takes note, then the owner looks at its queue (the agent dispatches, the
// role is routed).
func (d *Daemon) watchedInboxes() map[string]func(name string) {
	owners := map[string]func(string){}
	for _, a := range d.agents {
		owners[filepath.Join(a.box.Dir, "new")] = func(name string) {
			a.box.Changed(name)
			a.poke()
		}
	}
	for role, box := range d.roles {
		owners[filepath.Join(box.Dir, "new")] = func(name string) {
			box.Changed(name)
			d.route(role)
		}
	}
	return owners
}

// queueBoxes returns the inboxes the daemon delivers from.
func (d *Daemon) queueBoxes() []*inbox.Box {
	var boxes []*inbox.Box
	for _, a := range d.agents {
		boxes = append(boxes, a.box)
	}
	for _, box := range d.roles {
		boxes = append(boxes, box)
	}
	return boxes
}

// trackInboxes makes every inbox the daemon delivers from keep an index
// of its new/ (inbox.Box.Track), so that a dispatch or a routing pass reads
// the oldest message, not the whole backlog. Called once the watcher
// reports every change of those directories, before the agents start.
func (d *Daemon) trackInboxes() {
	for _, b := range d.queueBoxes() {
		b.Track()
	}
}

// resyncInboxes makes every index list its new/ again before its next
// use: after a watcher error (reports may be lost) and on the periodic
// rescan.
func (d *Daemon) resyncInboxes() {
	for _, b := range d.queueBoxes() {
		b.Resync()
	}
}

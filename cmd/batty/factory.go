package main

import (
	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// Factory is what every command of one run of batty is made with, as
// gh's cmdutil.Factory: the run's streams, the project a command works on
// and that project's daemon. newRoot makes one and hands it to every
// command. A command asks for its project only when it runs, never while
// the tree is built, so building the tree reads no file and needs no team.
type Factory struct {
	// IOStreams are the run's streams; a command reads and writes no
	// others (its cobra streams are these too).
	IOStreams *iostreams.IOStreams
}

// newFactory returns the factory of a run on the streams ios.
func newFactory(ios *iostreams.IOStreams) *Factory {
	return &Factory{IOStreams: ios}
}

// Project finds the project a command works on: the team file teamFile
// (the command's --team or -f) when given, else the team of $BATTY_DIR,
// else the team file found from the working directory up, never one
// inside batty's state (resolveProject).
func (f *Factory) Project(teamFile string) (project.Project, error) {
	return resolveProject(teamFile)
}

// Team is Project with the project's team file loaded and validated
// (loadTeamProject).
func (f *Factory) Team(teamFile string) (project.Project, *team.Config, error) {
	return loadTeamProject(teamFile)
}

// Daemon is the client of p's daemon, over its control socket; it runs a
// command's offline path when no daemon runs (see daemonClient).
func (f *Factory) Daemon(p project.Project) daemonClient {
	return daemonClient{layout: p.Layout}
}

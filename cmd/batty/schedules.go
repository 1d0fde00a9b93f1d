package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/project"
)

// offlineResumeSchedules puts a stopped team's failed schedules back to
// waiting.
func offlineResumeSchedules(p project.Project) ([]string, error) {
	cfg, err := loadTeamFile(p.TeamFile)
	if err != nil {
		return nil, err
	}
	return offline.ResumeSchedules(cfg, p.Layout)
}

// announceSchedules says which failed schedules `batty resume` has put
// back to waiting (nothing when none was failed).
func announceSchedules(w io.Writer, names []string, running bool) {
	switch {
	case len(names) == 0:
	case running:
		fmt.Fprintf(w, "batty: schedule(s) %s run again (they had failed); `batty status` shows when\n", strings.Join(names, ", "))
	default:
		fmt.Fprintf(w, "batty: schedule(s) %s run again once `batty start` starts the team (they had failed)\n", strings.Join(names, ", "))
	}
}

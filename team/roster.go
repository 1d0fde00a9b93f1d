package team

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// rosterFile is the shape of Roster's team file.
type rosterFile struct {
	Name         string       `yaml:"name"`
	BacklogLimit int          `yaml:"backlog_limit"`
	Roles        []rosterRole `yaml:"roles"`
}

type rosterRole struct {
	Name      string   `yaml:"name"`
	Instances int      `yaml:"instances"`
	TalksTo   []string `yaml:"talks_to,omitempty"`
}

// Roster is a team file of c that holds only who is in the team and who
// may message whom (the team's name and backlog limit, each role's name,
// instances and talks_to): what `batty send` needs on another host, where
// the project's files (prompt files, working directories) may not be.
// Parsed, it names the same agents, with the same talks_to, as c. It is
// a pure function.
func Roster(c *Config) ([]byte, error) {
	f := rosterFile{Name: c.Name, BacklogLimit: c.BacklogLimit}
	for _, r := range c.Roles {
		f.Roles = append(f.Roles, rosterRole{Name: r.Name, Instances: max(r.Instances, 1), TalksTo: r.TalksTo})
	}
	b, err := yaml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("the team's roster: %w", err)
	}
	return append([]byte("# The roster of team "+c.Name+", written by batty for `batty send` on this host: do not edit.\n"), b...), nil
}

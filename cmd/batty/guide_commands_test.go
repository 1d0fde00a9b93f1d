package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// guideCommand is one row of docs/guide/team.md's command table.
type guideCommand struct {
	group, name, teamFile string
}

// guideCommands reads the table of docs/guide/team.md whose header is "| Group |
// Command | Team file |", one row per command.
func guideCommands(t *testing.T) []guideCommand {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "guide", "team.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []guideCommand
	in := false
	for line := range strings.Lines(string(readme)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "| Group | Command | Team file |"):
			in = true
		case !in || strings.HasPrefix(line, "|---"):
		case !strings.HasPrefix(line, "|"):
			in = false
		default:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 3 {
				t.Fatalf("the command table of docs/guide/team.md: row %q has %d cells", line, len(cells))
			}
			cell := func(i int) string { return strings.TrimSpace(cells[i]) }
			rows = append(rows, guideCommand{cell(0), strings.Trim(cell(1), "`"), cell(2)})
		}
	}
	if len(rows) == 0 {
		t.Fatal(`docs/guide/team.md has no command table ("| Group | Command | Team file |")`)
	}
	return rows
}

// teamFileFlags says how cmd takes a team file, in the words of the guide's
// table: "`--team`, `-f`", "`--team`" or "none".
func teamFileFlags(cmd *cobra.Command) string {
	if cmd.Flags().Lookup("team") == nil {
		return "none"
	}
	if f := cmd.Flags().Lookup("file"); f != nil && f.Shorthand == "f" {
		return "`--team`, `-f`"
	}
	return "`--team`"
}

// TestGuideCommandTable: the guide's command table lists every command
// `batty --help` lists, and no other, each in the help group it is shown
// in and with the team file flags it takes.
func TestGuideCommandTable(t *testing.T) {
	root := testRoot()
	titles := map[string]string{}
	for _, g := range root.Groups() {
		titles[g.ID] = strings.TrimSuffix(g.Title, ":")
	}
	tree := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		// cobra's help lists its help command, which it does not count as
		// available.
		if c.IsAvailableCommand() || c.Name() == "help" {
			tree[c.Name()] = c
		}
	}
	seen := map[string]bool{}
	for _, r := range guideCommands(t) {
		if seen[r.name] {
			t.Errorf("the guide lists %s twice", r.name)
		}
		seen[r.name] = true
		c, ok := tree[r.name]
		if !ok {
			t.Errorf("the guide lists %q, which `batty --help` does not", r.name)
			continue
		}
		if g := titles[c.GroupID]; g != r.group {
			t.Errorf("the guide puts %s in group %q; `batty --help` in %q", r.name, r.group, g)
		}
		if f := teamFileFlags(c); f != r.teamFile {
			t.Errorf("the guide says %s takes the team file as %s; it takes %s", r.name, r.teamFile, f)
		}
	}
	var missing []string
	for name := range tree {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the guide's command table lacks %v", missing)
	}
}

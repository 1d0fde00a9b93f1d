package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// guideRef finds the guide page a help text names.
var guideRef = regexp.MustCompile(`See (docs/guide/[A-Za-z-]+\.md) for the whole story\.`)

// TestEveryCommandNamesAGuidePage: the help of every command batty lists,
// subcommands included, ends by naming a page of the user guide, and that
// page exists.
func TestEveryCommandNamesAGuidePage(t *testing.T) {
	root := testRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && !c.IsAvailableCommand() && c.Name() != "help" {
			return
		}
		m := guideRef.FindStringSubmatch(c.Long)
		if m == nil {
			t.Errorf("`%s --help` names no guide page:\n%s", c.CommandPath(), c.Long)
		} else if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("`%s --help` names %s: %v", c.CommandPath(), m[1], err)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestHelpShowsTheGuidePage: what `batty send --help` prints ends with its
// guide page.
func TestHelpShowsTheGuidePage(t *testing.T) {
	root := testRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"send", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "See docs/guide/team.md for the whole story.") {
		t.Fatalf("batty send --help:\n%s", out.String())
	}
}

package team

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestIndentationErrorNamesTheWrongLine: a team file with a line indented
// wrongly is reported at that line (the YAML library names the line its
// block began on, up to several lines before), with a hint.
func TestIndentationErrorNamesTheWrongLine(t *testing.T) {
	tests := []struct {
		name string
		src  string
		line int    // the wrong line
		hint string // what the hint says
	}{
		{"role key one space less", "name: t\nroles:\n  - name: eng\n    instances: 2\n   talks_to: [human]\n",
			5, "check the indentation of line 5: it starts at column 4, the key above it (line 4) at column 5"},
		{"role key one space more", "name: t\nroles:\n  - name: eng\n    instances: 2\n     talks_to: [human]\n",
			5, "check the indentation of line 5: it starts at column 6, the key above it (line 4) at column 5"},
		{"second role key one space more", "name: t\nroles:\n  - name: eng\n     instances: 2\n    talks_to: [human]\n",
			4, "check the indentation of line 4: it starts at column 6, the key above it (line 3) at column 5"},
		{"role key at the list's depth", "name: t\nroles:\n  - name: eng\n    instances: 2\n  cwd: .\n",
			5, "check the indentation of line 5: it starts at column 3"},
		{"list item at a key's depth", "name: t\nroles:\n  - name: eng\n    instances: 2\n    - name: mgr\n",
			5, "check the indentation of line 5"},
		{"list item at the top", "name: t\nroles:\n  - name: eng\n    instances: 2\n- name: mgr\n",
			5, "check the indentation of line 5: it starts at column 1"},
		{"list item one space in", "name: t\nroles:\n- name: eng\n  instances: 2\n - name: mgr\n",
			5, "check the indentation of line 5: it starts at column 2"},
		{"codex key one space less", "name: t\ncodex:\n  model: x\n sandbox: read-only\nroles:\n  - name: eng\n",
			4, "check the indentation of line 4: it starts at column 2, the key above it (line 3) at column 3"},
		{"env key one space less", "name: t\ncodex:\n  env:\n    A: b\n   B: c\nroles:\n  - name: eng\n",
			5, "check the indentation of line 5: it starts at column 4, the key above it (line 4) at column 5"},
		{"top key indented", "name: t\n codex:\n  model: x\nroles:\n  - name: eng\n",
			2, "check the indentation of line 2: it starts at column 2, the key above it (line 1) at column 1"},
		{"deep key after comments", "name: t\nroles:\n  - name: eng\n\n    # why\n    codex:\n      env:\n        A: b\n       B: c\n",
			9, "the key above it (line 8) at column 9"},
		{"after a block scalar", "name: t\nroles:\n  - name: eng\n    prompt: |\n      hello\n   cwd: .\n",
			6, "the key above it (line 4) at column 5"},
		{"after a flow list on two lines", "name: t\nroles:\n  - name: eng\n    talks_to: [\n      human]\n   cwd: .\n",
			6, "the key above it (line 4) at column 5"},
		{"after a quoted string on two lines", "name: t\nroles:\n  - name: eng\n    cwd: \"a\n      b\"\n   prompt: p.md\n",
			6, "the key above it (line 4) at column 5"},
		{"crlf line ends", "name: t\r\nroles:\r\n  - name: eng\r\n    instances: 2\r\n   cwd: .\r\n",
			5, "check the indentation of line 5: it starts at column 4"},
		{"tab in a role", "name: t\nroles:\n  - name: eng\n\tinstances: 2\n",
			4, "line 4 is indented with a tab; indent with spaces"},
		{"tab after spaces", "name: t\nroles:\n  - name: eng\n    instances: 2\n  \ttalks_to: [human]\n",
			5, "line 5 is indented with a tab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("team.yaml", []byte(tt.src))
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("Parse: %v", err)
			}
			p := ve.Problems[0]
			if p.Line != tt.line || !strings.HasPrefix(p.Message, "invalid YAML: ") || !strings.Contains(p.Hint, tt.hint) {
				t.Fatalf("got %s\nwant line %d with a hint containing %q", p, tt.line, tt.hint)
			}
			// The column is where the line's indentation ends (or its tab).
			line := lineOf([]byte(tt.src), tt.line)
			if want := len(line) - len(bytes.TrimLeft(line, " ")) + 1; p.Column != want {
				t.Fatalf("column %d, want %d: %s", p.Column, want, p)
			}
		})
	}
}

// TestWrongLineLeavesOtherErrorsAlone: errors that indentation does not
// cause keep the library's line, as does a file past the budget.
func TestWrongLineLeavesOtherErrorsAlone(t *testing.T) {
	flow := []byte("name: t\nroles:\n  - name: a\n    talks_to: [b\n  - name: b\n")
	if got := wrongLine(flow, 3, "did not find expected ',' or ']'"); got != 0 {
		t.Fatalf("a flow list left open: line %d", got)
	}
	big := []byte("name: t\nroles:\n  - name: eng\n" + strings.Repeat("    # padding padding padding padding padding padding padding\n", 20000) + "   cwd: .\n")
	if got := wrongLine(big, 2, "did not find expected '-' indicator"); got != 0 {
		t.Fatalf("past the budget: line %d", got)
	}
	small := []byte("name: t\nroles:\n  - name: eng\n" + strings.Repeat("    # padding\n", 100) + "   cwd: .\n")
	if got := wrongLine(small, 2, "did not find expected '-' indicator"); got != 104 {
		t.Fatalf("within the budget: line %d, want 104", got)
	}
}

// FuzzWrongLine checks that finding the wrong line never panics and names
// a line of the file at or after the line before the reported one.
func FuzzWrongLine(f *testing.F) {
	f.Add([]byte("name: t\nroles:\n  - name: eng\n   cwd: .\n"), 2)
	f.Add([]byte("a:\n\tb: c\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, reported int) {
		if len(data) > 4096 {
			return
		}
		problem := yamlProblem(data)
		n := wrongLine(data, reported, problem)
		if n == 0 {
			return
		}
		if n < reported-1 || n > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("line %d for reported %d in %d lines", n, reported, bytes.Count(data, []byte("\n"))+1)
		}
		if indentHint(data, n) == "" || wrongColumn(lineOf(data, n)) < 1 {
			t.Fatal("no hint or column")
		}
	})
}

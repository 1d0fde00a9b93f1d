package fanout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Template is an instruction with placeholders: `{column}` stands for the
// row's value of that column, `{{` and `}}` for literal braces.
type Template struct {
	parts []part
}

type part struct {
	text   string // literal text, or
	column int    // the column's index when isCol
	isCol  bool
}

// ParseTemplate parses text against columns. A placeholder naming no
// column, an unclosed `{` and a lone `}` are errors naming them (and the
// columns). It never panics.
func ParseTemplate(text string, columns []string) (*Template, error) {
	index := make(map[string]int, len(columns))
	for i, c := range columns {
		index[c] = i
	}
	t := &Template{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(text); {
		switch c := text[i]; {
		case c == '{' && strings.HasPrefix(text[i:], "{{"):
			lit.WriteByte('{')
			i += 2
		case c == '}' && strings.HasPrefix(text[i:], "}}"):
			lit.WriteByte('}')
			i += 2
		case c == '}':
			return nil, fmt.Errorf("a lone '}' at byte %d: write }} for a literal brace", i+1)
		case c == '{':
			end := strings.IndexByte(text[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("'{' at byte %d is not closed: write {column} for a value, {{ for a literal brace", i+1)
			}
			name := text[i+1 : i+1+end]
			col, ok := index[name]
			if !ok {
				return nil, fmt.Errorf("placeholder {%s} names no column of the CSV file; its columns: %s", name, strings.Join(columns, ", "))
			}
			flush()
			t.parts = append(t.parts, part{column: col, isCol: true})
			i += end + 2
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	return t, nil
}

// Render returns the instruction for one row (the values in column order).
func (t *Template) Render(values []string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.isCol {
			b.WriteString(values[p.column])
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// HasColumns reports whether the template names a column.
func (t *Template) HasColumns() bool {
	for _, p := range t.parts {
		if p.isCol {
			return true
		}
	}
	return false
}

// RowDir is the working directory of a row with values (Options.Cwd):
// dir rendered for it, joined to base unless absolute, cleaned. It must
// be a directory already; a value that climbs out of the directory the
// rest of the template names (a ".." path element) is refused, and so is
// an empty value (every row would share the parent).
func RowDir(dir *Template, base string, values []string) (string, error) {
	for _, p := range dir.parts {
		if !p.isCol {
			continue
		}
		v := values[p.column]
		if v == "" {
			return "", errors.New("the row's working directory: its value is empty")
		}
		for _, el := range strings.Split(filepath.ToSlash(v), "/") {
			if el == ".." {
				return "", fmt.Errorf("the row's working directory: the value %q climbs out of its parent (a .. element)", v)
			}
		}
	}
	d := dir.Render(values)
	if !filepath.IsAbs(d) {
		d = filepath.Join(base, d)
	}
	d = filepath.Clean(d)
	fi, err := os.Stat(d)
	if err != nil {
		return "", fmt.Errorf("the row's working directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("the row's working directory %s is not a directory", d)
	}
	return d, nil
}

package fanout

import (
	"fmt"
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

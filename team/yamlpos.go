package team

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"
)

// The YAML library names, for most syntax errors, the line where the
// block it was parsing began (its "context"), not the line it could not
// parse: a key indented one space too few under roles: is reported at the
// roles: line. wrongLine finds the line itself.

// indentProblems are the YAML syntax errors that a line indented wrongly
// (too much, too little, or with a tab) causes; wrongLine looks for the
// line of these only.
var indentProblems = []string{
	"did not find expected key",
	"did not find expected '-' indicator",
	"mapping values are not allowed in this context",
	"mapping keys are not allowed in this context",
	"block sequence entries are not allowed in this context",
	"found a tab character that violates indentation",
	"found a tab character where an indentation space is expected",
	"found character that cannot start any token",
}

// relocateBudget bounds the bytes wrongLine parses again for one file
// (the prefixes it tries add up); past it the library's line stands.
const relocateBudget = 4 << 20

// wrongLine returns the 1-based line at which data stops being valid YAML
// for the syntax error problem (without the "yaml: line N: " prefix) that
// the YAML library reported at line reported, or 0 when problem is not
// one of indentProblems or the line cannot be found within relocateBudget.
//
// It is the first line L, from the line before reported on, such that
// lines 1..L alone fail with the same problem: the parser fails on the
// first token it cannot place, so the file up to that token's line fails
// the same way, and no shorter prefix does. A prefix cut inside a
// construct spanning lines (a flow list, a quoted string) fails with
// another problem and is passed over. Pure; it never panics.
func wrongLine(data []byte, reported int, problem string) int {
	if !slices.Contains(indentProblems, problem) || reported < 1 {
		return 0
	}
	spent := 0
	line, end := 1, 0 // data[:end] holds lines 1..line-1
	for end < len(data) {
		next := len(data)
		if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
			next = end + i + 1
		}
		end = next
		if line >= reported-1 {
			spent += end
			if spent > relocateBudget {
				return 0
			}
			if yamlProblem(data[:end]) == problem {
				return line
			}
		}
		line++
	}
	return 0
}

// yamlProblem returns the problem the YAML library finds in data, without
// its "yaml: line N: " prefix, or "" when every document in data parses.
// It never panics.
func yamlProblem(data []byte) (problem string) {
	defer func() {
		if r := recover(); r != nil {
			problem = fmt.Sprint(r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				return m[2]
			}
			return err.Error()
		}
	}
}

// lineOf returns line n (1-based) of data without its line break, or nil
// when data has fewer lines.
func lineOf(data []byte, n int) []byte {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return nil
		}
		data = data[j+1:]
	}
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = data[:j]
	}
	return bytes.TrimSuffix(data, []byte("\r"))
}

// indentOf returns the leading spaces and tabs of line, and whether they
// hold a tab.
func indentOf(line []byte) (indent []byte, tab bool) {
	n := 0
	for n < len(line) && (line[n] == ' ' || line[n] == '\t') {
		n++
	}
	return line[:n], bytes.IndexByte(line[:n], '\t') >= 0
}

// indentHint says how to fix line n of data, the line wrongLine found: a
// tab in its indentation, or, when they differ, at which column it starts
// and at which column the last key or list item above it starts (found
// in lines 1..n-1, which parse when n is wrongLine's line).
func indentHint(data []byte, n int) string {
	line := lineOf(data, n)
	indent, tab := indentOf(line)
	if tab {
		return fmt.Sprintf("line %d is indented with a tab; indent with spaces, YAML does not allow tabs", n)
	}
	if above, ok := lastKeyAbove(data, n); ok && above.col != len(indent)+1 {
		return fmt.Sprintf("check the indentation of line %d: it starts at column %d, the %s above it (line %d) at column %d", n, len(indent)+1, above.what, above.line, above.col)
	}
	return fmt.Sprintf("check the indentation of line %d", n)
}

// place is where a key or list item starts.
type place struct {
	what      string // "key" or "list item"
	line, col int
}

// lastKeyAbove returns where the last mapping key or list item of a block
// collection that starts before line n of data starts (a key rather than
// the list item it opens),
// as the YAML library places them in lines 1..n-1; ok is false when those
// do not parse or hold none.
func lastKeyAbove(data []byte, n int) (last place, ok bool) {
	end := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data[end:], '\n')
		if j < 0 {
			return place{}, false
		}
		end += j + 1
	}
	var doc yaml.Node
	if err := decodeNoPanic(data[:end], &doc); err != nil {
		return place{}, false
	}
	see := func(nd *yaml.Node, what string) {
		if nd.Line >= n || nd.Line < last.line || (nd.Line == last.line && what != "key") {
			return
		}
		last = place{what, nd.Line, nd.Column}
	}
	var walk func(*yaml.Node, int)
	walk = func(nd *yaml.Node, depth int) {
		if nd == nil || depth > 64 || nd.Style&yaml.FlowStyle != 0 {
			return // in a flow collection, columns say nothing of indentation
		}
		for i, c := range nd.Content {
			switch {
			case nd.Kind == yaml.MappingNode && i%2 == 0:
				see(c, "key")
			case nd.Kind == yaml.SequenceNode:
				see(c, "list item")
			}
			walk(c, depth+1)
		}
	}
	walk(&doc, 0)
	return last, last.line > 0
}

// decodeNoPanic decodes the first YAML document of data into doc; a panic
// of the library is an error.
func decodeNoPanic(data []byte, doc *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return yaml.NewDecoder(bytes.NewReader(data)).Decode(doc)
}

// wrongColumn returns the 1-based column to name on line, the line
// wrongLine found: its first tab, else where its content starts.
func wrongColumn(line []byte) int {
	indent, tab := indentOf(line)
	if tab {
		return bytes.IndexByte(indent, '\t') + 1
	}
	return len(indent) + 1
}

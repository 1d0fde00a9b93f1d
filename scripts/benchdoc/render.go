package main

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// docTemplate is docs/benchmarks.md with a {{table "group"}} where each
// group's table goes: the prose lives here, the figures in the data file.
//
//go:embed template.md
var docTemplate string

// Render executes tmpl (docTemplate's syntax) over d and returns the
// markdown. A group the template names that is not in groups is an error;
// a known group without a run renders as "not measured yet".
func Render(d *Data, tmpl string) (string, error) {
	t, err := template.New("benchmarks.md").Option("missingkey=error").Funcs(template.FuncMap{
		"table": func(name string) (string, error) { return table(d, name) },
	}).Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("benchmark template: %w", err)
	}
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("benchmark template: %w", err)
	}
	return b.String(), nil
}

// table renders group name's latest run as a markdown table: one row per
// benchmark (the median of its runs for each figure), then the derived
// rows; every row ends with the machine, the date and the command.
func table(d *Data, name string) (string, error) {
	g, ok := groups[name]
	if !ok {
		return "", fmt.Errorf("unknown benchmark group %q", name)
	}
	run, ok := d.Groups[name]
	if !ok {
		return fmt.Sprintf("_Not measured yet: run `scripts/bench.sh %s`._\n", name), nil
	}
	tail := []string{run.Machine.String(), run.Date, "`" + run.Command + "`"}

	order, byName := collect(run.Results)
	notes := map[string]string{}
	var names []string
	for _, r := range g.rows {
		notes[r.name] = r.note
		if _, ok := byName[r.name]; ok {
			names = append(names, r.name)
		}
	}
	for _, n := range order {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	med := map[string]map[string]float64{}
	for _, n := range names {
		med[n] = medians(byName[n])
	}
	var extra []derivedRow
	if g.derive != nil {
		extra = g.derive(med)
	}

	head := []string{"benchmark"}
	for _, c := range g.cols {
		head = append(head, c.head)
	}
	head = append(head, "notes", "runs", "machine", "date", "command")
	var b strings.Builder
	writeRow(&b, head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	writeRow(&b, sep)

	if run.Skipped != "" {
		cells := []string{"–"}
		for range g.cols {
			cells = append(cells, "–")
		}
		cells = append(cells, "skipped: "+run.Skipped, "0")
		writeRow(&b, append(cells, tail...))
		return b.String(), nil
	}
	for _, n := range names {
		cells := []string{"`" + n + "`"}
		for _, c := range g.cols {
			cells = append(cells, cell(c, med[n]))
		}
		cells = append(cells, notes[n], strconv.Itoa(len(byName[n])))
		writeRow(&b, append(cells, tail...))
	}
	for _, x := range extra {
		cells := []string{x.label}
		for _, c := range g.cols {
			cells = append(cells, cell(c, x.metrics))
		}
		cells = append(cells, x.note, "")
		writeRow(&b, append(cells, tail...))
	}
	return b.String(), nil
}

// collect groups results by name, keeping the order of first appearance.
func collect(rs []Result) ([]string, map[string][]Result) {
	var order []string
	by := map[string][]Result{}
	for _, r := range rs {
		if _, ok := by[r.Name]; !ok {
			order = append(order, r.Name)
		}
		by[r.Name] = append(by[r.Name], r)
	}
	return order, by
}

// medians returns, per unit, the median over rs (b.N as unitIterations).
func medians(rs []Result) map[string]float64 {
	vals := map[string][]float64{}
	for _, r := range rs {
		vals[unitIterations] = append(vals[unitIterations], float64(r.Iterations))
		for u, v := range r.Metrics {
			vals[u] = append(vals[u], v)
		}
	}
	out := map[string]float64{}
	for u, vs := range vals {
		out[u] = median(vs)
	}
	return out
}

// cell renders column c from metrics.
func cell(c column, metrics map[string]float64) string {
	var parts []string
	for _, u := range c.units {
		if v, ok := metrics[u]; ok {
			parts = append(parts, formatMetric(u, v))
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

// writeRow writes one markdown table row, escaping "|" and line breaks.
func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		c = strings.NewReplacer("|", `\|`, "\r", " ", "\n", " ").Replace(c)
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

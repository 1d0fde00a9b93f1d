// Command benchdoc keeps docs/benchmarks.md: it records the output of a
// benchmark group's `go test -bench` run into a data file
// (docs/benchmarks.json, the latest run of every group) and renders the
// markdown from all the groups in it, so that running one group keeps the
// others' rows. scripts/bench.sh drives it:
//
//	go test -run '^$' -bench . ./protocol/ | benchdoc record -data docs/benchmarks.json -group protocol -command "go test …"
//	benchdoc record -data docs/benchmarks.json -group fanout -command "…" -skip "no ./fanout/ yet"
//	benchdoc render -data docs/benchmarks.json -out docs/benchmarks.md
//
// record stamps the run with the machine (CPU model, cores, kernel, Go
// version) and the UTC date. Output lines that are not benchmark results
// are ignored; a run with none is refused (the data file is left alone).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stderr, time.Now, ThisMachine))
}

// usage is printed for a command line that cannot be run.
const usage = `usage:
  benchdoc record -data FILE -group NAME -command CMD [-go VERSION] [-skip REASON] < go-test-output
  benchdoc render -data FILE -out FILE
`

// run is main with its inputs injected; it returns the exit status (0 ok,
// 1 error, 2 usage).
func run(args []string, stdin io.Reader, stderr io.Writer, now func() time.Time, machine func(goVersion string) Machine) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("benchdoc "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "the data file (docs/benchmarks.json)")
	var err error
	switch args[0] {
	case "record":
		group := fs.String("group", "", "the group the output belongs to")
		command := fs.String("command", "", "the command that produced the output")
		goVersion := fs.String("go", "", "the Go version that ran it (default: this program's)")
		skip := fs.String("skip", "", "record the group as skipped for this reason (no input read)")
		if fs.Parse(args[1:]) != nil || *data == "" || *group == "" || *command == "" || fs.NArg() != 0 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		err = record(*data, *group, *command, *skip, stdin, stderr, now(), machine(*goVersion))
	case "render":
		out := fs.String("out", "", "the markdown file to write (docs/benchmarks.md)")
		if fs.Parse(args[1:]) != nil || *data == "" || *out == "" || fs.NArg() != 0 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		err = render(*data, *out)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "benchdoc:", err)
		return 1
	}
	return 0
}

// record parses out (unless skip is set) and stores it as group's run.
func record(dataPath, group, command, skip string, out io.Reader, stderr io.Writer, now time.Time, m Machine) error {
	if _, ok := groups[group]; !ok {
		return fmt.Errorf("unknown group %q (the groups are listed in scripts/benchdoc/groups.go)", group)
	}
	d, err := Load(dataPath)
	if err != nil {
		return err
	}
	r := Run{Command: command, Date: utcDate(now), Machine: m, Skipped: skip}
	if skip == "" {
		if r.Results, err = Parse(out); err != nil {
			return err
		}
		if len(r.Results) == 0 {
			return errors.New("no benchmark lines in the output of " + group + "; " + dataPath + " left as it was")
		}
	}
	if !d.Record(group, r) {
		fmt.Fprintf(stderr, "benchdoc: %s skipped (%s); its figures of %s are kept\n", group, skip, d.Groups[group].Date)
		return nil
	}
	return d.Save(dataPath)
}

// render writes the markdown of the data file to out.
func render(dataPath, out string) error {
	d, err := Load(dataPath)
	if err != nil {
		return err
	}
	md, err := Render(d, docTemplate)
	if err != nil {
		return err
	}
	return writeFileAtomic(out, []byte(md))
}

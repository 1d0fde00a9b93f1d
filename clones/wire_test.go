package clones

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/battyhq/batty/workspaces"
)

func TestReadAnswerSkipsTheShellsLines(t *testing.T) {
	in := "Welcome {\nbatty-clonex {}\n" + answerMark + `{"branch_commit":"abc","bundle_size":3}` + "\nXYZ"
	br := bufio.NewReader(strings.NewReader(in))
	a, err := readAnswer(br)
	if err != nil || a.BranchCommit != "abc" || a.BundleSize != 3 {
		t.Fatalf("%+v, %v", a, err)
	}
	rest, _ := br.ReadString(0)
	if rest != "XYZ" {
		t.Fatalf("the bundle after the line: %q", rest)
	}
}

func TestReadRequestRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"unknown field":  `{"op":"tips","agent":"a","base":"main","surprise":1}` + "\n",
		"negative size":  `{"op":"tips","agent":"a","base":"main","bundle_size":-1}` + "\n",
		"no newline":     `{"op":"tips"}`,
		"not json":       "hello\n",
		"too long":       strings.Repeat("x", maxHeader+10) + "\n",
		"empty":          "",
		"trailing value": `{"op":"tips"} {}` + "\n",
	} {
		if _, err := readRequest(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFailureRoundTrip(t *testing.T) {
	f := failureOf(&workspaces.SetupError{Err: errors.New("exit status 3"), Output: "broken"})
	var se *workspaces.SetupError
	if err := f.Err("b1"); !errors.As(err, &se) || se.Output != "broken" || !strings.Contains(err.Error(), "on host b1") {
		t.Fatalf("setup failure: %v", err)
	}
	f = failureOf(workspaces.ErrLowDisk)
	if err := f.Err("b1"); !errors.Is(err, workspaces.ErrLowDisk) {
		t.Fatalf("low disk: %v", err)
	}
	if err := failureOf(errors.New("boom")).Err("b1"); err.Error() != "on host b1: boom" {
		t.Fatalf("other: %v", err)
	}
	// A merge left with markers on the host is one here too, its files
	// named (and bounded: the host's answer is not trusted).
	f = failureOf(fmt.Errorf("commit the work of eng: %w", &workspaces.UnresolvedError{Files: []string{"shared.txt"}, Total: 1}))
	if got := workspaces.Unresolved(f.Err("b1")); !slices.Equal(got, []string{"shared.txt"}) {
		t.Fatalf("unresolved: %q", got)
	}
	f.Files = make([]string, 10*workspaces.MaxUnresolved)
	for i := range f.Files {
		f.Files[i] = "f"
	}
	if got := workspaces.Unresolved(f.Err("b1")); len(got) != workspaces.MaxUnresolved {
		t.Fatalf("unresolved from a host naming %d files: %d kept", len(f.Files), len(got))
	}
}

// The decoders of what comes over a host's stream never panic.
func FuzzReadRequest(f *testing.F) {
	f.Add([]byte(`{"op":"commit","agent":"eng-1","base":"main","commit":{"Subject":"x"},"haves":["a"]}` + "\n"))
	f.Add([]byte(`{"op":"prepare","bundle_size":12}` + "\nabc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		readRequest(bufio.NewReader(bytes.NewReader(b)))
	})
}

func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte(answerMark + `{"exists":true,"dirty":2,"merge":{"Conflicts":["a"]}}` + "\n"))
	f.Add([]byte("motd\n" + answerMark + `{"failure":{"kind":"setup","message":"m"}}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		readAnswer(bufio.NewReader(bytes.NewReader(b)))
	})
}

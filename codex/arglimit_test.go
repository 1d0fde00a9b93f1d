package codex

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// fittingInstructions returns the longest plain-ASCII role instructions
// whose developer_instructions argument still fits one argument with
// InstructionsReserve to spare.
func fittingInstructions() string {
	overhead := len(instructionsArg(""))
	return strings.Repeat("x", MaxArgLen-1-InstructionsReserve-overhead)
}

func TestCheckInstructions(t *testing.T) {
	fits := fittingInstructions()
	for _, tc := range []struct {
		name    string
		text    string
		wantLen int // 0: fits
	}{
		{"empty", "", 0},
		{"short", "You design.\nYou never write code.", 0},
		{"exactly at the limit", fits, 0},
		{"one byte over", fits + "x", MaxArgLen - InstructionsReserve},
		// Escaping counts: a newline is two bytes on the command line.
		{"escaping pushes it over", fits[1:] + "\n", MaxArgLen - InstructionsReserve},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckInstructions(tc.text)
			if tc.wantLen == 0 {
				if err != nil {
					t.Fatalf("CheckInstructions = %v, want nil", err)
				}
				return
			}
			var tooLong *ArgTooLongError
			if !errors.As(err, &tooLong) || tooLong.Len != tc.wantLen || tooLong.What != "developer_instructions" {
				t.Fatalf("CheckInstructions = %#v, want an ArgTooLongError of %d bytes", err, tc.wantLen)
			}
			for _, want := range []string{"developer_instructions", "at most 126975 bytes are allowed", "131072", "MAX_ARG_STRLEN", "batty keeps 4096"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

func TestExecArgsDeveloperInstructions(t *testing.T) {
	o := ExecOptions{Config: []string{"a=1"}, DeveloperInstructions: "be \"brief\"\nalways", ExtraArgs: []string{"--oss"}}
	want := []string{"exec", "--json", "-c", "a=1", "-c", `developer_instructions="be \"brief\"\nalways"`, "--oss", "-"}
	if got := ExecArgs(o, ""); !slices.Equal(got, want) {
		t.Fatalf("ExecArgs = %q, want %q", got, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Validate refuses any argument execve would refuse, naming it.
func TestExecOptionsValidateArgLength(t *testing.T) {
	// A role's instructions at their limit, plus batty's section filling
	// the reserve: the whole argument is as long as Linux allows.
	whole := fittingInstructions() + strings.Repeat("z", InstructionsReserve)
	if err := (ExecOptions{DeveloperInstructions: whole}).Validate(); err != nil {
		t.Fatalf("instructions at the limit: %v", err)
	}
	var tooLong *ArgTooLongError
	if err := (ExecOptions{DeveloperInstructions: whole + "z"}).Validate(); !errors.As(err, &tooLong) || tooLong.Len != MaxArgLen || tooLong.Reserved != 0 {
		t.Fatalf("one byte over the argument limit: %v", err)
	}
	big := strings.Repeat("y", MaxArgLen)
	for _, tc := range []struct {
		o    ExecOptions
		what string
	}{
		{ExecOptions{DeveloperInstructions: big}, "developer_instructions"},
		{ExecOptions{Config: []string{"model_instructions=" + big}}, "model_instructions"},
		{ExecOptions{ExtraArgs: []string{big}}, `argument "yyyy`},
		{ExecOptions{Model: big}, `argument "yyyy`},
	} {
		err := tc.o.Validate()
		var tooLong *ArgTooLongError
		if !errors.As(err, &tooLong) || !strings.HasPrefix(tooLong.What, tc.what) || !strings.HasPrefix(err.Error(), "codex: ") {
			t.Errorf("Validate = %v, want an ArgTooLongError naming %s", err, tc.what)
		}
	}
}

func TestReadInstructions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := ReadInstructions(write("ok.md", "\n\n  You design.\n  Tersely.\n\n")); err != nil || got != "You design.\n  Tersely." {
		t.Fatalf("ReadInstructions = %q, %v", got, err)
	}
	if got, err := ReadInstructions(write("blank.md", " \n\t\n")); err != nil || got != "" {
		t.Fatalf("blank file: %q, %v", got, err)
	}
	fits := fittingInstructions()
	if got, err := ReadInstructions(write("limit.md", "\n"+fits+"\n")); err != nil || got != fits {
		t.Fatalf("file at the limit: %d bytes, %v", len(got), err)
	}
	var tooLong *ArgTooLongError
	if _, err := ReadInstructions(write("over.md", fits+"x")); !errors.As(err, &tooLong) || tooLong.Len != MaxArgLen-InstructionsReserve {
		t.Fatalf("one byte over: %v", err)
	}
	huge := write("huge.md", strings.Repeat(" ", 9*MaxArgLen)+"x")
	if _, err := ReadInstructions(huge); !errors.As(err, &tooLong) || tooLong.Len != 9*MaxArgLen+1 {
		t.Fatalf("huge file: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir, "/dev/zero"} {
		if _, err := ReadInstructions(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadInstructions(%s) = %v, want a refusal", p, err)
		}
	}
	if _, err := ReadInstructions(filepath.Join(dir, "missing.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

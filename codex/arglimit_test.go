package codex

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// fittingInstructions returns the longest plain-ASCII text whose
// developer_instructions argument still fits one argument.
func fittingInstructions() string {
	overhead := len(instructionsArg(""))
	return strings.Repeat("x", MaxArgLen-1-overhead)
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
		{"one byte over", fits + "x", MaxArgLen},
		// Escaping counts: a newline is two bytes on the command line.
		{"escaping pushes it over", fits[1:] + "\n", MaxArgLen},
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
			for _, want := range []string{"developer_instructions", "131072", "MAX_ARG_STRLEN"} {
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
	if err := (ExecOptions{DeveloperInstructions: fittingInstructions()}).Validate(); err != nil {
		t.Fatalf("instructions at the limit: %v", err)
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

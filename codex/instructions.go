package codex

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// instructionsKey is the codex config key that carries standing
// instructions; codex adds them to every model request as a developer
// message.
const instructionsKey = "developer_instructions"

// instructionsArg is the -c value carrying text as developer instructions.
func instructionsArg(text string) string {
	return instructionsKey + "=" + TOMLString(text)
}

// InstructionsReserve is how many bytes of the developer_instructions
// argument batty keeps for the section it adds to a role's instructions
// (who the agent is and how it runs batty; see shim.CrewInstructions). A
// role's own instructions may take the rest.
const InstructionsReserve = 4096

// CheckInstructions reports, as an *ArgTooLongError, when text is too long
// to be a role's standing instructions: once TOML-escaped, as codex's
// developer_instructions argument, it must fit one command-line argument
// with InstructionsReserve bytes to spare. It is a pure function.
func CheckInstructions(text string) error {
	return checkInstructionsArg(text, InstructionsReserve)
}

// checkInstructionsArg reports when text, as the developer_instructions
// argument, does not fit one command-line argument with reserve bytes to
// spare.
func checkInstructionsArg(text string, reserve int) error {
	if n := len(instructionsArg(text)); n+1 > MaxArgLen-reserve {
		return &ArgTooLongError{What: instructionsKey, Len: n, Reserved: reserve}
	}
	return nil
}

// maxInstructionsFile bounds how much of an instructions file is read; a
// longer file is refused unread (instructions that large are a mistake,
// whatever blank space they hold).
const maxInstructionsFile = 8 * MaxArgLen

// ReadInstructions reads a role's standing instructions from the regular
// file path and returns its text without surrounding blank space. Text that
// CheckInstructions refuses is refused with its *ArgTooLongError (for a
// file of more than 8 × MaxArgLen bytes, not read, Len is the file's size),
// so what it returns can always be given to codex. It refuses anything but
// a regular file, so it never blocks on a FIFO or reads a device forever.
func ReadInstructions(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInstructionsFile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxInstructionsFile {
		return "", &ArgTooLongError{What: instructionsKey, Len: max(int(st.Size()), len(b)), Reserved: InstructionsReserve}
	}
	text := strings.TrimSpace(string(b))
	if err := CheckInstructions(text); err != nil {
		return "", err
	}
	return text, nil
}

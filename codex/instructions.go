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

// CheckInstructions reports, as an *ArgTooLongError, when text is too long
// to reach codex as developer instructions: once TOML-escaped it must fit
// one command-line argument. It is a pure function.
func CheckInstructions(text string) error {
	if n := len(instructionsArg(text)); n+1 > MaxArgLen {
		return &ArgTooLongError{What: instructionsKey, Len: n}
	}
	return nil
}

// maxInstructionsFile bounds how much of an instructions file is read; a
// longer file is refused unread (instructions that large are a mistake,
// whatever blank space they hold).
const maxInstructionsFile = 8 * MaxArgLen

// ReadInstructions reads standing instructions from the regular file path
// and returns its text without surrounding blank space. Text that
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
		return "", &ArgTooLongError{What: instructionsKey, Len: max(int(st.Size()), len(b))}
	}
	text := strings.TrimSpace(string(b))
	if err := CheckInstructions(text); err != nil {
		return "", err
	}
	return text, nil
}

package codex

import (
	"fmt"
	"strings"
)

// MaxArgLen is the most bytes Linux lets one command-line argument (or one
// environment string) of a new program take, counting its terminating NUL:
// MAX_ARG_STRLEN, 32 pages of 4 KiB. execve fails with E2BIG on a longer
// one, so codex would not start at all.
const MaxArgLen = 32 * 4096

// ArgTooLongError says that one argument of codex's command line would be
// longer than MaxArgLen allows.
type ArgTooLongError struct {
	// What names the argument, e.g. "developer_instructions".
	What string
	// Len is the argument's length in bytes, without its NUL.
	Len int
	// Reserved is how many of the bytes Linux allows are kept for text
	// batty adds (InstructionsReserve for a role's instructions; 0 for any
	// other argument).
	Reserved int
}

// Max is the most bytes the argument may take, without its NUL.
func (e *ArgTooLongError) Max() int { return MaxArgLen - 1 - e.Reserved }

func (e *ArgTooLongError) Error() string {
	if e.Reserved > 0 {
		return fmt.Sprintf("codex: %s is %d bytes as one command-line argument; at most %d bytes are allowed: Linux allows %d plus its terminating NUL (MAX_ARG_STRLEN = %d), of which batty keeps %d for its own instructions to the agent",
			e.What, e.Len, e.Max(), MaxArgLen-1, MaxArgLen, e.Reserved)
	}
	return fmt.Sprintf("codex: %s is %d bytes as one command-line argument; Linux allows at most %d bytes plus its terminating NUL (MAX_ARG_STRLEN = %d)",
		e.What, e.Len, MaxArgLen-1, MaxArgLen)
}

// checkArgLens reports the first argument of args that is too long for
// execve.
func checkArgLens(args []string) error {
	for _, a := range args {
		if len(a)+1 <= MaxArgLen {
			continue
		}
		what := "argument " + fmt.Sprintf("%.40q", a)
		if k, _, ok := strings.Cut(a, "="); ok && len(k) < 80 && !strings.ContainsAny(k, " \n") {
			what = k
		}
		return &ArgTooLongError{What: what, Len: len(a)}
	}
	return nil
}

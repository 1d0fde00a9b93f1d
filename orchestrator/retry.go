package orchestrator

import (
	"fmt"

	"github.com/battyhq/batty/textclip"
)

// maxNoteError bounds, in characters, the failure a retry note quotes.
const maxNoteError = 200

// retryNote is the prompt header's note for attempt n of maxAttempts of a
// message whose previous attempt failed with cause and error lastErr.
// worked says whether that attempt had completed any item (a command, a
// patch, a message): only then may work be half done. It is a pure
// function.
func retryNote(n, maxAttempts int, cause, lastErr string, worked bool) string {
	lastErr = textclip.Runes(lastErr, maxNoteError, textclip.Ellipsis)
	after := "the earlier attempt ended before any work was done and got no answer (the thread may show it above without one)"
	if worked {
		after = "the earlier attempt had begun working when it failed: check what is already done before repeating work"
	}
	return fmt.Sprintf("retry %d of %d after %s: %s; %s", n, maxAttempts, cause, lastErr, after)
}

package blame

import (
	"strings"
	"testing"
)

// Redact takes the secrets out of every turn's text of a blame and of a
// show, the commits' turns included, and leaves the rest.
func TestRedact(t *testing.T) {
	secret := "use sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD please"
	r := Result{Commits: []*Commit{{SHA: "a", Turn: &Turn{Text: secret}}, {SHA: "b"}}}
	r.Redact()
	s := Shown{Turns: []Turn{{Text: secret}}, Commits: []*Commit{{SHA: "c", Turn: &Turn{Text: secret}}}}
	s.Redact()
	for _, got := range []string{r.Commits[0].Turn.Text, s.Turns[0].Text, s.Commits[0].Turn.Text} {
		if strings.Contains(got, "sk-proj-") || !strings.Contains(got, "please") {
			t.Errorf("redacted %q", got)
		}
	}
}

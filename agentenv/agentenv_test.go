package agentenv

import "testing"

func TestLookup(t *testing.T) {
	env := []string{"A=1", Dir + "=/x", Dir + "X=/z", Dir + "=/y", "B="}
	for key, want := range map[string]string{Dir: "/y", "A": "1", "B": "", "C": "", Dir + "X": "/z"} {
		if got := Lookup(env, key); got != want {
			t.Errorf("Lookup(%s) = %q, want %q", key, got, want)
		}
	}
}

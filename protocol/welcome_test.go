package protocol

import (
	"slices"
	"testing"
	"time"
)

// The Welcome hands the shim what must stay off its command line: the
// worker's extra environment and the standing instructions.
func TestHandshakeCarriesSettings(t *testing.T) {
	orch, shim := pair(t, Options{})
	sent := Welcome{
		Env:          []string{"OPENAI_API_KEY=sk-secret", "EMPTY="},
		Instructions: "You design.\nYou never write code.",
	}
	type offered struct {
		w   Welcome
		err error
	}
	got := make(chan offered, 1)
	go func() {
		w, err := shim.OfferHelloWelcome(Hello{Agent: "alice"}, 5*time.Second)
		got <- offered{w, err}
	}()
	if _, err := orch.AcceptHelloWith(sent, 5*time.Second); err != nil {
		t.Fatalf("AcceptHelloWith: %v", err)
	}
	var r offered
	select {
	case r = <-got:
	case <-time.After(waitLimit):
		t.Fatal("OfferHelloWelcome did not return")
	}
	if r.err != nil {
		t.Fatalf("OfferHelloWelcome: %v", r.err)
	}
	if r.w.Version != Version || !slices.Equal(r.w.Env, sent.Env) || r.w.Instructions != sent.Instructions {
		t.Fatalf("Welcome = %+v, want %+v with version %d", r.w, sent, Version)
	}
}

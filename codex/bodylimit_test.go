package codex

import (
	"strings"
	"testing"
)

func TestCheckBodyLen(t *testing.T) {
	if err := CheckBodyLen(strings.Repeat("語", MaxBodyChars)); err != nil {
		t.Fatalf("a body of MaxBodyChars characters: %v", err)
	}
	err := CheckBodyLen(strings.Repeat("x", MaxBodyChars+1))
	if err == nil || !strings.Contains(err.Error(), "Input exceeds the maximum length of 1047552 characters") {
		t.Fatalf("error = %v", err)
	}
}

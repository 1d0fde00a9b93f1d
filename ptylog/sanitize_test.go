package ptylog

import "testing"

func TestCleanInline(t *testing.T) {
	if got, want := cleanInline(" a\nb\tc \x1b[1m\u202e"), `a b c \u202e`; got != want {
		t.Errorf("cleanInline = %q, want %q", got, want)
	}
}

func TestCleanBlock(t *testing.T) {
	if got, want := cleanBlock("\n\nfirst\x1b]52;c;eA==\x07\r\n\u2066second \t\n\n"), `first`+"\n"+`\u2066second`; got != want {
		t.Errorf("cleanBlock = %q, want %q", got, want)
	}
}

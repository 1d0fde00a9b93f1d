package main

import (
	"reflect"
	"testing"
)

func TestShimArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		ok   bool
	}{
		{args: []string{"shim", "--agent", "a", "--codex", "codex"}, want: []string{"--agent", "a", "--codex", "codex"}, ok: true},
		{args: []string{"shim"}, want: []string{}, ok: true},
		{args: []string{"shim", "--help"}, want: []string{"--help"}, ok: true},
		{args: nil},
		{args: []string{"status"}},
		{args: []string{"help", "shim"}},
		{args: []string{"--verbose", "shim"}}, // a flag first: cobra's to parse
		{args: []string{"shimmer"}},
	} {
		got, ok := shimArgs(tc.args)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("shimArgs(%q) = %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

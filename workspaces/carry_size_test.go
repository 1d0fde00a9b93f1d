package workspaces

import "testing"

func TestCountObjectsSize(t *testing.T) {
	out := "count: 3\nsize: 12\nin-pack: 40\npacks: 1\nsize-pack: 1024\nprune-packable: 0\ngarbage: 0\nsize-garbage: 7\n"
	if got, err := countObjectsSize(out); err != nil || got != (12+1024)<<10 {
		t.Fatalf("countObjectsSize = %d, %v", got, err)
	}
	if _, err := countObjectsSize("size: many\n"); err == nil {
		t.Fatal("a bad size is not an error")
	}
}

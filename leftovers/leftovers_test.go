package leftovers

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/project"
)

// One cgroup per project: the same for every run of a project, another
// for another project.
func TestCgroupNameIsPerProject(t *testing.T) {
	a, b := project.Layout{Dir: "/p/a/.batty"}, project.Layout{Dir: "/p/b/.batty"}
	if CgroupName(a) != CgroupName(project.Layout{Dir: "/p/a/.batty"}) || CgroupName(a) == CgroupName(b) {
		t.Fatalf("CgroupName: %s, %s", CgroupName(a), CgroupName(b))
	}
	if n := CgroupName(a); !strings.HasPrefix(n, "batty-") || len(n) != len("batty-")+16 || strings.ContainsRune(n, '/') {
		t.Fatalf("CgroupName = %q", n)
	}
}

package demo

import (
	"os"
	"testing"

	"github.com/battyhq/batty/project/projecttest"
)

func TestMain(m *testing.M) {
	os.Exit(projecttest.Isolated(m.Run))
}

package executor

import (
	"os"
	"testing"

	"github.com/berthhq/berth/internal/shim"
)

func TestMain(m *testing.M) {
	shim.RunIfCalled() // the process driver starts this test binary as its tasks' shim
	os.Exit(m.Run())
}

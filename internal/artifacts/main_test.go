package artifacts

import (
	"os"
	"testing"

	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

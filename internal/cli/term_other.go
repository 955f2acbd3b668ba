//go:build !linux

package cli

import (
	"errors"
	"os"

	"github.com/berthhq/berth/internal/driver"
)

// Terminals are only handled on Linux; elsewhere exec runs without raw mode.

func isTerminal(*os.File) bool { return false }

func makeRaw(*os.File) (func(), error) { return nil, errors.New("raw terminals need Linux") }

func watchSize(*os.File) (<-chan driver.TermSize, func()) { return nil, func() {} }

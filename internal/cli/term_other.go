//go:build !linux

package cli

import (
	"errors"
	"os"

	v4 "github.com/berthhq/berth/api/v4"
)

// Terminals are only handled on Linux; elsewhere exec runs without raw mode.

func isTerminal(*os.File) bool { return false }

func makeRaw(*os.File) (func(), error) { return nil, errors.New("raw terminals need Linux") }

func watchSize(*os.File) (<-chan v4.TermSize, func()) { return nil, func() {} }

package driver

import "errors"

// ErrPortInUse marks a start that failed because a host port the task publishes is held
// by another program (Docker's "port is already allocated"): the executor ends the pod
// with a port conflict, which the controllers answer with other ports rather than a
// restart on the same ones.
var ErrPortInUse = errors.New("host port in use")

// PortInUse marks err as ErrPortInUse, keeping its message.
func PortInUse(err error) error { return portInUse{err} }

type portInUse struct{ error }

func (e portInUse) Unwrap() []error { return []error{e.error, ErrPortInUse} }

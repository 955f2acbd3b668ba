package driver

import (
	"errors"
	"log/slog"
	"time"
)

// RegistryAuth is what a container's image is pulled with: the registry host
// (v4.ImageRegistry's) and its credentials, which the executor resolved from the
// container's imagePullUser/imagePullPasswd or its imagePullSecrets. It prints and logs
// without its password.
type RegistryAuth struct {
	Server   string
	Username string
	Password string
}

// String names the registry and the user, never the password.
func (a *RegistryAuth) String() string {
	if a == nil {
		return "<none>"
	}
	return a.Username + "@" + a.Server
}

// LogValue keeps the password out of structured logs.
func (a *RegistryAuth) LogValue() slog.Value {
	if a == nil {
		return slog.StringValue("<none>")
	}
	return slog.GroupValue(slog.String("server", a.Server), slog.String("user", a.Username))
}

// GoString keeps the password out of %#v.
func (a *RegistryAuth) GoString() string { return "driver.RegistryAuth{" + a.String() + "}" }

// PullPhase is a step of an image pull.
type PullPhase int

const (
	// PullStarted: the image is missing (or the policy is Always) and the pull begins.
	PullStarted PullPhase = iota
	// PullProgress: Current of Total bytes of the layers the registry announced so far.
	PullProgress
	// PullDone: the image is present; Size is its size and Took the pull's duration.
	PullDone
)

// PullEvent is what a driver tells of a pull in progress (ContainerSetup.PullProgress).
type PullEvent struct {
	Phase PullPhase
	Image string
	// Current and Total are the bytes downloaded and to download, over the layers the
	// registry announced so far (a layer already on the node counts in neither).
	Current, Total int64
	// Layers is how many layers the pull downloads, Done how many of them are complete.
	Layers, Done int
	Size         int64
	Took         time.Duration
}

// ErrPull marks a start that failed because the image could not be pulled: the message
// is the registry's answer ("unauthorized: authentication required", "manifest
// unknown"), without credentials.
var ErrPull = errors.New("image pull failed")

// PullFailed marks err as ErrPull, keeping its message.
func PullFailed(err error) error { return pullFailed{err} }

type pullFailed struct{ error }

// PullMessage is the message of the failed pull in err's chain ("pull image x:
// unauthorized: ..."), without what wraps it, and whether there is one.
func PullMessage(err error) (string, bool) {
	var pf pullFailed
	if !errors.As(err, &pf) {
		return "", false
	}
	return pf.error.Error(), true
}

func (e pullFailed) Unwrap() []error { return []error{e.error, ErrPull} }

//go:build !cgo || !linux

package gpu

import (
	"context"

	v4 "github.com/berthhq/berth/api/v4"
)

// NVML stands in for the NVIDIA Management Library where berth is built without cgo:
// it never opens, so the node has no cards.
type NVML struct{}

// OpenNVML returns ErrNoLibrary: this build cannot load NVML. lib is ignored.
func OpenNVML(lib any, sysfs string) (*NVML, error) { return nil, ErrNoLibrary }

// Cards is never called on a build without NVML.
func (*NVML) Cards() ([]v4.NodeGPU, error) { return nil, ErrNoLibrary }

// WatchHealth is never called on a build without NVML.
func (*NVML) WatchHealth(ctx context.Context, unhealthy func(uuid, reason string)) error {
	return ErrNoLibrary
}

// Close does nothing.
func (*NVML) Close() error { return nil }

var _ Source = (*NVML)(nil)

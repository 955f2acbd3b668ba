package csitest

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// GetPluginInfo names the plugin.
func (p *Plugin) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: p.opts.Name, VendorVersion: "1.0.0"}, nil
}

// GetPluginCapabilities offers the controller service (unless NoController) and
// topology constraints.
func (p *Plugin) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	svc := func(t csipb.PluginCapability_Service_Type) *csipb.PluginCapability {
		return &csipb.PluginCapability{Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: t}}}
	}
	caps := []*csipb.PluginCapability{svc(csipb.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS)}
	if !p.opts.NoController {
		caps = append(caps, svc(csipb.PluginCapability_Service_CONTROLLER_SERVICE))
	}
	return &csipb.GetPluginCapabilitiesResponse{Capabilities: caps}, nil
}

// Probe says the plugin is ready: its root is there.
func (p *Plugin) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

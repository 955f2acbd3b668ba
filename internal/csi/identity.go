package csi

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// PluginInfo is what a plugin says it is.
type PluginInfo struct {
	Name          string
	VendorVersion string
	Manifest      map[string]string
}

// PluginInfo asks the plugin for its name and version.
func (c *Client) PluginInfo(ctx context.Context) (PluginInfo, error) {
	r, err := call(ctx, c, "GetPluginInfo", probeTimeout, func(ctx context.Context) (*csipb.GetPluginInfoResponse, error) {
		return c.identity.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{})
	})
	if err != nil {
		return PluginInfo{}, err
	}
	return PluginInfo{Name: r.GetName(), VendorVersion: r.GetVendorVersion(), Manifest: r.GetManifest()}, nil
}

// PluginCapabilities are the plugin-wide services a plugin offers.
type PluginCapabilities struct {
	// Controller: the plugin serves the controller service.
	Controller bool
	// AccessibilityConstraints: its volumes are not equally reachable from every node,
	// so topology matters.
	AccessibilityConstraints bool
}

// PluginCapabilities asks which services the plugin offers.
func (c *Client) PluginCapabilities(ctx context.Context) (PluginCapabilities, error) {
	r, err := call(ctx, c, "GetPluginCapabilities", probeTimeout, func(ctx context.Context) (*csipb.GetPluginCapabilitiesResponse, error) {
		return c.identity.GetPluginCapabilities(ctx, &csipb.GetPluginCapabilitiesRequest{})
	})
	if err != nil {
		return PluginCapabilities{}, err
	}
	var pc PluginCapabilities
	for _, cap := range r.GetCapabilities() {
		switch cap.GetService().GetType() {
		case csipb.PluginCapability_Service_CONTROLLER_SERVICE:
			pc.Controller = true
		case csipb.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS:
			pc.AccessibilityConstraints = true
		}
	}
	return pc, nil
}

// Probe reports whether the plugin is ready. A plugin that leaves Ready unset is ready
// (the spec's rule).
func (c *Client) Probe(ctx context.Context) (bool, error) {
	r, err := call(ctx, c, "Probe", probeTimeout, func(ctx context.Context) (*csipb.ProbeResponse, error) {
		return c.identity.Probe(ctx, &csipb.ProbeRequest{})
	})
	if err != nil {
		return false, err
	}
	if r.GetReady() == nil {
		return true, nil
	}
	return r.GetReady().GetValue(), nil
}

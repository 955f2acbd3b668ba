package v4

import "slices"

// Limits of a node's CSI plugins (NodeStatus.CSIPlugins). What a plugin says of itself
// reaches the store, the scheduler and users' screens through its node's agent, and a
// plugin is any workload granted the csi-plugin privilege: every string is bounded and
// free of control characters.
const (
	MaxCSIPluginVersionLen = 128
	// MaxCSINodeIDLen is CSI's own bound of a node ID (256 bytes).
	MaxCSINodeIDLen     = 256
	MaxCSIPluginMessage = 1024
)

// ValidCSIPluginName reports whether name may name a CSI plugin: a domain name of at
// most 63 characters (CSI's rule), which is also safe as a directory name under the
// agent's plugin directory (no '/', never "." or "..").
func ValidCSIPluginName(name string) bool {
	return name != "" && len(name) <= maxPluginNameLen && pluginNamePattern.MatchString(name)
}

// ValidateCSIPlugins checks an agent's list of CSI plugins (the body of PUT
// /v1/agent/nodes/{name}/csiplugins), with field paths under plugins.
func ValidateCSIPlugins(ps []CSIPlugin) FieldErrors {
	var errs FieldErrors
	validateCSIPlugins("plugins", ps, &errs)
	return errs
}

func validateCSIPlugins(path string, ps []CSIPlugin, errs *FieldErrors) {
	if len(ps) > MaxCSIPlugins {
		errs.add(path, "must list at most %d plugins, got %d", MaxCSIPlugins, len(ps))
		return
	}
	seen := make(map[string]bool, len(ps))
	for i := range ps {
		p := &ps[i]
		ip := indexPath(path, i)
		checkCSIPluginName(ip+".name", p.Name, errs)
		if seen[p.Name] {
			errs.add(ip+".name", "%q is listed twice", truncate(p.Name, 80))
		}
		seen[p.Name] = true
		checkBoundedText(ip+".version", p.Version, MaxCSIPluginVersionLen, errs)
		checkBoundedText(ip+".nodeID", p.NodeID, MaxCSINodeIDLen, errs)
		checkBoundedText(ip+".message", p.Message, MaxCSIPluginMessage, errs)
		if p.MaxVolumes < 0 {
			errs.add(ip+".maxVolumes", "must not be negative, got %d", p.MaxVolumes)
		}
		validateNodeTopology(ip+".topology", p.Topology, errs)
		checkCapabilities(ip+".controllerCapabilities", p.ControllerCapabilities, errs, CSICreateDelete, CSIPublishUnpublish)
		checkCapabilities(ip+".nodeCapabilities", p.NodeCapabilities, errs, CSIStageUnstage)
	}
}

// checkBoundedText refuses a string longer than n or with control characters.
func checkBoundedText(path, s string, n int, errs *FieldErrors) {
	if len(s) > n || !printable.MatchString(s) {
		errs.add(path, "must be at most %d characters without control characters", n)
	}
}

// checkCapabilities checks a list of capability names: each one of allowed, once.
func checkCapabilities(path string, caps []string, errs *FieldErrors, allowed ...string) {
	if len(caps) > len(allowed) {
		errs.add(path, "must list at most %d capabilities (%v), got %d", len(allowed), allowed, len(caps))
		return
	}
	for i, c := range caps {
		cp := indexPath(path, i)
		oneOf(cp, c, errs, allowed...)
		if slices.Contains(caps[:i], c) {
			errs.add(cp, "%q is listed twice", truncate(c, 40))
		}
	}
}

// validateNodeTopology checks a node's topology segments by the rules of a volume's.
func validateNodeTopology(path string, t map[string]string, errs *FieldErrors) {
	if len(t) > maxTopologySegments {
		errs.add(path, "must have at most %d segments, got %d", maxTopologySegments, len(t))
		return
	}
	for _, k := range sortedStringKeys(t) {
		kp := joinKey(path, k)
		if len(k) > maxSegmentKeyLen || !labelKeyPattern.MatchString(k) {
			errs.add(kp, "key must be at most %d letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit", maxSegmentKeyLen)
		}
		if v := t[k]; len(v) > maxSegmentValueLen || !segmentValPattern.MatchString(v) {
			errs.add(kp, "value must be 1 to %d letters, digits, '.', '_' or '-', starting and ending with a letter or digit", maxSegmentValueLen)
		}
	}
}

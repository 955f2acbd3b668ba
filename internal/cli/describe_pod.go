package cli

import (
	"fmt"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// constraints writes one line per intersection item (all must hold); the alternatives of
// an item are joined with OR.
func (d *describer) constraints(c *v4.Constraint) {
	if c == nil || len(c.IntersectionItem) == 0 {
		d.kv("Constraints", "%s", none)
		return
	}
	d.section("Constraints", func() {
		for _, item := range c.IntersectionItem {
			alts := make([]string, 0, len(item.UnionData))
			for _, u := range item.UnionData {
				alts = append(alts, constraintString(u))
			}
			d.line(strings.Join(alts, " OR "))
		}
	})
}

// constraintString renders one rule: "hostname UNIQUE", "idc MAXPER 5",
// "rack CLUSTER [r0 r1]", "port GREATER 10", "cpuset LIKE [1-4]".
func constraintString(c v4.ConstraintData) string {
	s := c.Name + " " + strings.ToUpper(c.Operate)
	switch {
	case c.Scalar != nil:
		s += " " + strconv.FormatFloat(c.Scalar.Value, 'f', -1, 64)
	case c.Text != nil:
		s += " " + c.Text.Value
	case c.Set != nil:
		s += " [" + strings.Join(c.Set.Item, " ") + "]"
	case len(c.Ranges) > 0:
		r := make([]string, len(c.Ranges))
		for i, rg := range c.Ranges {
			r[i] = fmt.Sprintf("%d-%d", rg.Begin, rg.End)
		}
		s += " [" + strings.Join(r, " ") + "]"
	}
	return s
}

func (d *describer) template(t *v4.PodTemplate) {
	d.section("Template", func() {
		if t.Metadata != nil {
			d.labels("Labels", t.Metadata.Labels)
		}
		p := &t.Spec
		network := orNone(p.NetworkMode)
		if p.NetworkType != "" {
			network += " (" + p.NetworkType + ")"
		}
		d.kv("Network", "%s", network)
		if p.Runtime != "" {
			d.kv("Runtime", "%s", p.Runtime)
		}
		if p.NetLimit != nil {
			d.kv("Egress Limit", "%d Mbit/s", p.NetLimit.EgressLimit)
		}
		d.dependencyRefs(p.Dependencies)
		if len(p.Containers) > 0 {
			d.section("Containers", func() {
				for i := range p.Containers {
					d.container(&p.Containers[i])
				}
			})
		}
		if len(p.Processes) > 0 {
			d.section("Processes", func() {
				for i := range p.Processes {
					d.process(&p.Processes[i])
				}
			})
		}
	})
}

func (d *describer) container(c *v4.Container) {
	d.section(orNone(c.Name), func() {
		d.kv("Image", "%s", c.Image)
		if c.ImagePullPolicy != "" {
			d.kv("Pull Policy", "%s", c.ImagePullPolicy)
		}
		if len(c.ImagePullSecrets) > 0 {
			names := make([]string, len(c.ImagePullSecrets))
			for i, r := range c.ImagePullSecrets {
				names[i] = r.Name
			}
			d.kv("Pull Secrets", "%s", strings.Join(names, ", "))
		}
		if c.Command != "" {
			d.kv("Command", "%s", c.Command)
		}
		if len(c.Args) > 0 {
			d.kv("Args", "%s", strings.Join(c.Args, " "))
		}
		if c.WorkingDir != "" {
			d.kv("Working Dir", "%s", c.WorkingDir)
		}
		if c.Privileged {
			d.kv("Privileged", "true")
		}
		for _, v := range c.Volumes {
			ro := ""
			if v.Volume.ReadOnly {
				ro = " (read-only)"
			}
			host := v.Volume.HostPath
			switch {
			case v.Volume.Instance:
				host = "(the instance's directory on its node)"
			case host == "":
				host = "(the pod's directory)"
			}
			d.kv("Volume", "%s -> %s%s", host, v.Volume.MountPath, ro)
		}
		d.taskCommon(c.Ports, c.Resources, c.HealthChecks, c.Env, c.ConfigMaps, c.Secrets)
	})
}

func (d *describer) process(p *v4.ProcessTask) {
	d.section(p.ProcName, func() {
		d.kv("Start", "%s", p.StartCmd)
		for _, kv := range [][2]string{
			{"Stop", p.StopCmd}, {"Reload", p.ReloadCmd}, {"Restart", p.RestartCmd}, {"Kill", p.KillCmd},
			{"User", p.User}, {"Work Path", p.WorkPath}, {"Pid File", p.PidFile},
			{"Log Path", p.LogPath}, {"Config Path", p.CfgPath},
		} {
			if kv[1] != "" {
				d.kv(kv[0], "%s", kv[1])
			}
		}
		if p.StartGracePeriod > 0 {
			d.kv("Start Grace", "%ds", p.StartGracePeriod)
		}
		for _, u := range p.URIs {
			d.kv("Package", "%s", u.Value) // never the credentials
		}
		d.taskCommon(p.Ports, p.Resources, p.HealthChecks, p.Env, p.ConfigMaps, p.Secrets)
	})
}

// taskCommon writes what containers and processes share.
func (d *describer) taskCommon(ports []v4.Port, res *v4.Resources, checks []v4.HealthCheck,
	env []v4.EnvVar, cms []v4.ConfigMapRef, secrets []v4.SecretRef) {
	for _, p := range ports {
		d.kv("Port", "%s", portString(p))
	}
	if res != nil {
		if res.Requests != nil {
			d.kv("Requests", "%s", resourceString(res.Requests))
		}
		if res.Limits != nil {
			d.kv("Limits", "%s", resourceString(res.Limits))
		}
		for _, e := range res.ExtendedResources {
			d.kv("Extended", "%s=%s", e.Name, strconv.FormatFloat(e.Value, 'f', -1, 64))
		}
	}
	for _, h := range checks {
		d.kv("Health Check", "%s", healthString(h))
	}
	for _, e := range env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil:
			d.kv("Env", "%s from %s", e.Name, e.ValueFrom.ResourceFieldRef.Resource)
		default:
			d.kv("Env", "%s=%s", e.Name, e.Value)
		}
	}
	for _, c := range cms {
		for _, it := range c.Items {
			d.kv("ConfigMap", "%s[%s] as %s %s", c.Name, it.DataKey, it.Type, it.KeyOrPath)
		}
	}
	for _, s := range secrets {
		for _, it := range s.Items {
			d.kv("Secret", "%s[%s] as %s %s", s.SecretName, it.DataKey, it.Type, it.KeyOrPath)
		}
	}
}

// portString renders "http 8080/tcp, host 31000" (host 0 is a random port).
func portString(p v4.Port) string {
	s := p.Name
	if p.ContainerPort != 0 {
		s += " " + strconv.Itoa(p.ContainerPort)
	}
	if p.Protocol != "" {
		s += "/" + p.Protocol
	}
	switch {
	case p.HostPort > 0:
		s += ", host " + strconv.Itoa(p.HostPort)
	case p.HostPort == 0:
		s += ", host random"
	}
	return s
}

func resourceString(r *v4.ResourceList) string {
	var parts []string
	if r.CPU != "" {
		parts = append(parts, "cpu="+string(r.CPU))
	}
	if r.Memory != "" {
		parts = append(parts, "memory="+string(r.Memory)+"MB")
	}
	if r.Storage != "" {
		parts = append(parts, "storage="+string(r.Storage)+"MB")
	}
	return orNone(strings.Join(parts, " "))
}

// healthString renders a check: "HTTP http://:web/healthz every 10s, timeout 5s, 3 failures".
func healthString(h v4.HealthCheck) string {
	s := h.Type
	switch {
	case h.HTTP != nil:
		scheme := h.HTTP.Scheme
		if scheme == "" {
			scheme = "http"
		}
		s += " " + scheme + "://:" + portRef(h.HTTP.Port, h.HTTP.PortName) + h.HTTP.Path
	case h.TCP != nil:
		s += " :" + portRef(h.TCP.Port, h.TCP.PortName)
	case h.Command != nil:
		s += " " + strconv.Quote(h.Command.Value)
	}
	s += fmt.Sprintf(" every %ds, timeout %ds, %d failures", h.IntervalSeconds, h.TimeoutSeconds, h.ConsecutiveFailures)
	if h.GracePeriodSeconds > 0 {
		s += fmt.Sprintf(", grace %ds", h.GracePeriodSeconds)
	}
	if h.DelaySeconds > 0 {
		s += fmt.Sprintf(", delay %ds", h.DelaySeconds)
	}
	return s
}

func portRef(port int, name string) string {
	if port != 0 {
		return strconv.Itoa(port)
	}
	return name
}

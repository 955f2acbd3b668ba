package cli

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

func (d *describer) service(s *v4.Service) {
	d.kv("Selector", "%s", labelString(s.Spec.Selector))
	d.kv("Type", "%s", orNone(s.Spec.Type))
	if len(s.Spec.ClusterIP) > 0 {
		d.kv("Cluster IP", "%s", strings.Join(s.Spec.ClusterIP, ", "))
	}
	if len(s.Spec.Ports) == 0 {
		d.kv("Ports", "%s", none)
		return
	}
	d.section("Ports", func() {
		for _, p := range s.Spec.Ports {
			line := fmt.Sprintf("%s %d/%s", p.Name, p.ServicePort, p.Protocol)
			if p.TargetPort != 0 {
				line += fmt.Sprintf(" -> %d", p.TargetPort)
			}
			if p.NodePort != 0 {
				line += fmt.Sprintf(", node port %d", p.NodePort)
			}
			if p.DomainName != "" {
				line += ", domain " + p.DomainName + p.Path
			}
			d.line(line)
		}
	})
}

// configMap lists keys with their type and size; file contents are not printed (they
// can be large or binary: `berth get cm NAME -o yaml` shows them).
func (d *describer) configMap(c *v4.ConfigMap) {
	if len(c.Datas) == 0 {
		d.kv("Data", "%s", none)
		return
	}
	d.section("Data", func() {
		for _, k := range slices.Sorted(maps.Keys(c.Datas)) {
			v := c.Datas[k]
			if v.Type == "" || v.Type == v4.InjectFile {
				d.kv(k, "%s, %s", orNone(v.Type), sizeString(v.Content))
				continue
			}
			d.kv(k, "%s %s", v.Type, v.Content) // a URL to fetch; the password is not shown
		}
	})
}

// secret lists keys and sizes, never values.
func (d *describer) secret(s *v4.Secret) {
	d.kv("Type", "%s", orNone(s.Type))
	if len(s.Datas) == 0 {
		d.kv("Data", "%s", none)
		return
	}
	d.section("Data", func() {
		for _, k := range slices.Sorted(maps.Keys(s.Datas)) {
			v := s.Datas[k]
			size := sizeString(v.Content)
			if v.Path != "" {
				size += ", path " + v.Path
			}
			d.kv(k, "%s", size)
		}
	})
}

// sizeString gives the decoded size of base64 content (its raw size if it is not base64).
func sizeString(content string) string {
	if b, err := base64.StdEncoding.DecodeString(content); err == nil {
		return fmt.Sprintf("%d bytes", len(b))
	}
	return fmt.Sprintf("%d bytes", len(content))
}

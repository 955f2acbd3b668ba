package cli

import (
	"fmt"
	"sort"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/bytesize"
)

// volumeColumns are the columns of `berth get volumes`.
func volumeColumns() kindColumns {
	return kindColumns{[]string{"PLUGIN", "ACCESS", "CAPACITY", "PHASE", "CLAIMS"}, func(o v4.Object) []string {
		v, _ := o.(*v4.CSIVolume)
		if v == nil {
			return []string{"", "", "", "", ""}
		}
		return []string{v.Spec.Plugin, v.Spec.AccessMode, volumeCapacity(v), orNone(v.Status.Phase), fmt.Sprint(len(v.Status.Claims))}
	}}
}

// volumeCapacity is the size the plugin reported, else the range asked for.
func volumeCapacity(v *v4.CSIVolume) string {
	switch c := v.Spec.Capacity; {
	case v.Status.Capacity > 0:
		return bytesize.Format(v.Status.Capacity)
	case c != nil && c.Max != "":
		return orNone(c.Min) + "-" + c.Max
	case c != nil:
		return c.Min + "-"
	}
	return none
}

// volume describes a CSI volume. Parameters are shown; the secret only by name.
func (d *describer) volume(v *v4.CSIVolume) {
	s := &v.Spec
	d.kv("Plugin", "%s", s.Plugin)
	d.kv("External ID", "%s", orNone(firstOf(v.Status.ExternalID, s.ExternalID)))
	d.kv("Capacity", "%s", volumeCapacity(v))
	d.kv("Access Mode", "%s", s.AccessMode)
	d.kv("Attachment", "%s", s.AttachmentMode)
	if m := s.MountOptions; m != nil {
		d.kv("Mount", "fsType=%s flags=%s", orNone(m.FSType), orNone(strings.Join(m.Flags, ",")))
	}
	if t := s.Topology; t != nil {
		d.kv("Topology", "required %s; preferred %s", topologies(t.Required), topologies(t.Preferred))
	}
	d.labels("Parameters", s.Parameters)
	if s.Secrets != nil {
		d.kv("Secrets", "%s", s.Secrets.Name)
	}
	d.kv("Phase", "%s", orNone(v.Status.Phase))
	if len(v.Status.Topology) > 0 {
		d.kv("Accessible", "%s", topologies(v.Status.Topology))
	}
	if v.Status.Message != "" {
		d.kv("Message", "%s", v.Status.Message)
	}
	if len(v.Status.Claims) > 0 {
		d.section("Claims", func() {
			for _, c := range v.Status.Claims {
				d.line(fmt.Sprintf("%s on %s (%s)", c.TaskGroup, c.Node, c.Mode))
			}
		})
	}
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// topologies writes {k=v,k=v} per topology, keys sorted.
func topologies(ts []v4.VolumeTopology) string {
	if len(ts) == 0 {
		return none
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		keys := make([]string, 0, len(t.Segments))
		for k := range t.Segments {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + "=" + t.Segments[k]
		}
		out = append(out, "{"+strings.Join(keys, ",")+"}")
	}
	return strings.Join(out, " ")
}

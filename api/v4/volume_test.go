package v4

import (
	"fmt"
	"strings"
	"testing"
)

const volumeDoc = `{"apiVersion":"v4","kind":"volume","metadata":{"name":"data","namespace":"ns-a"},
	"spec":{"plugin":"hostpath.csi.k8s.io","capacity":{"min":"1G","max":"2Gi"},"accessMode":"Single-Node-Writer",
	"mountOptions":{"fsType":"ext4","flags":["noatime","uid=1000"]},
	"topology":{"required":[{"segments":{"topology.hostpath.csi/node":"n1"}}]},
	"parameters":{"kind":"fast"},"secrets":{"name":"vol-creds"}},
	"status":{"phase":"Available","externalID":"forged"}}`

func baseVolume() *CSIVolume {
	v := &CSIVolume{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindVolume},
		Metadata: ObjectMeta{Name: "data", Namespace: "ns-a"},
		Spec:     VolumeSpec{Plugin: "hostpath.csi.k8s.io", Capacity: &VolumeCapacity{Min: "1G"}}}
	Default(v)
	return v
}

func volumeWith(f func(v *CSIVolume)) Object { v := baseVolume(); f(v); return v }

func TestVolumeParse(t *testing.T) {
	docs, err := Parse([]byte(volumeDoc))
	if err != nil {
		t.Fatal(err)
	}
	v := docs[0].Object.(*CSIVolume)
	if v.Spec.AccessMode != AccessSingleNodeWriter || v.Spec.AttachmentMode != AttachFileSystem {
		t.Errorf("modes = %q %q, want the canonical single-node-writer and the default file-system", v.Spec.AccessMode, v.Spec.AttachmentMode)
	}
	if v.Status.Phase != "" || v.Status.ExternalID != "" {
		t.Errorf("a user's status was kept: %+v", v.Status)
	}
	if errs := Validate(v); len(errs) > 0 {
		t.Fatalf("valid volume refused: %v", errs)
	}
	roundTrip(t, v)
	if k, err := ParseKind("vols"); err != nil || k != KindVolume || KindVolume.Plural() != "volumes" || !KindVolume.Namespaced() {
		t.Errorf("ParseKind(vols) = %v, %v", k, err)
	}
}

func TestParseVolumeSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 0, false}, {"4096", 4096, false}, {"1G", 1e9, false}, {"1GB", 1e9, false}, {"2Gi", 2 << 30, false},
		{"500MiB", 500 << 20, false}, {"1024P", 1024e15, false},
		{"G", 0, true}, {"1.5G", 0, true}, {"-1G", 0, true}, {"1g", 0, true}, {"1 G", 0, true},
		{"2048Pi", 0, true}, {"99999999999999999999", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseVolumeSize(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseVolumeSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestVolumeRules(t *testing.T) {
	many := func(n int, f func(i int) string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = f(i)
		}
		return m
	}
	seg := func(m map[string]string) *VolumeTopologyRequest {
		return &VolumeTopologyRequest{Required: []VolumeTopology{{Segments: m}}}
	}
	runRules(t, []ruleCase{
		{"plugin required", volumeWith(func(v *CSIVolume) { v.Spec.Plugin = "" }), "spec.plugin", "required"},
		{"plugin with a path", volumeWith(func(v *CSIVolume) { v.Spec.Plugin = "../../run/x" }), "spec.plugin", "domain name"},
		{"plugin with a slash", volumeWith(func(v *CSIVolume) { v.Spec.Plugin = "csi/hostpath" }), "spec.plugin", "domain name"},
		{"plugin too long", volumeWith(func(v *CSIVolume) { v.Spec.Plugin = strings.Repeat("a", 64) }), "spec.plugin", "at most 63"},
		{"name with a slash", volumeWith(func(v *CSIVolume) { v.Metadata.Name = "a/b" }), "metadata.name", "lowercase"},
		{"name with dots", volumeWith(func(v *CSIVolume) { v.Metadata.Name = ".." }), "metadata.name", "'.'"},
		{"namespace with a slash", volumeWith(func(v *CSIVolume) { v.Metadata.Namespace = "../kube" }), "metadata.namespace", "'.'"},
		{"external id and capacity", volumeWith(func(v *CSIVolume) { v.Spec.ExternalID = "vol-1" }), "spec.capacity", "externalID"},
		{"external id too long", volumeWith(func(v *CSIVolume) { v.Spec.Capacity = nil; v.Spec.ExternalID = strings.Repeat("x", 129) }), "spec.externalID", "at most 128"},
		{"external id newline", volumeWith(func(v *CSIVolume) { v.Spec.Capacity = nil; v.Spec.ExternalID = "a\nb" }), "spec.externalID", "control"},
		{"capacity empty", volumeWith(func(v *CSIVolume) { v.Spec.Capacity = &VolumeCapacity{} }), "spec.capacity", "min, max"},
		{"capacity unit", volumeWith(func(v *CSIVolume) { v.Spec.Capacity.Min = "1 gig" }), "spec.capacity.min", "whole number"},
		{"capacity huge", volumeWith(func(v *CSIVolume) { v.Spec.Capacity.Max = "9000P" }), "spec.capacity.max", "1 EiB"},
		{"capacity inverted", volumeWith(func(v *CSIVolume) { v.Spec.Capacity.Max = "1M" }), "spec.capacity", "larger than max"},
		{"access mode", volumeWith(func(v *CSIVolume) { v.Spec.AccessMode = "rw-many" }), "spec.accessMode", "must be one of"},
		{"attachment mode", volumeWith(func(v *CSIVolume) { v.Spec.AttachmentMode = "fs" }), "spec.attachmentMode", "must be one of"},
		{"block with mount options", volumeWith(func(v *CSIVolume) {
			v.Spec.AttachmentMode = AttachBlockDevice
			v.Spec.MountOptions = &VolumeMountOptions{FSType: "xfs"}
		}), "spec.mountOptions", "block-device"},
		{"fs type", volumeWith(func(v *CSIVolume) { v.Spec.MountOptions = &VolumeMountOptions{FSType: "ext4;rm"} }), "spec.mountOptions.fsType", "lowercase"},
		{"flag suid", volumeWith(func(v *CSIVolume) { v.Spec.MountOptions = &VolumeMountOptions{Flags: []string{"noatime", "SUID"}} }), "spec.mountOptions.flags[1]", "not allowed"},
		{"flag dev", volumeWith(func(v *CSIVolume) { v.Spec.MountOptions = &VolumeMountOptions{Flags: []string{"dev"}} }), "spec.mountOptions.flags[0]", "not allowed"},
		{"flag bind", volumeWith(func(v *CSIVolume) { v.Spec.MountOptions = &VolumeMountOptions{Flags: []string{"rbind"}} }), "spec.mountOptions.flags[0]", "not allowed"},
		{"flag smuggles more", volumeWith(func(v *CSIVolume) { v.Spec.MountOptions = &VolumeMountOptions{Flags: []string{"noatime,suid"}} }), "spec.mountOptions.flags[0]", "no ','"},
		{"flag empty", volumeWith(func(v *CSIVolume) { v.Spec.MountOptions = &VolumeMountOptions{Flags: []string{""}} }), "spec.mountOptions.flags[0]", "1 to 256"},
		{"flags many", volumeWith(func(v *CSIVolume) { v.Spec.MountOptions = &VolumeMountOptions{Flags: make([]string, 33)} }), "spec.mountOptions.flags", "at most 32"},
		{"topology empty", volumeWith(func(v *CSIVolume) { v.Spec.Topology = seg(nil) }), "spec.topology.required[0].segments", "at least one"},
		{"topology value", volumeWith(func(v *CSIVolume) { v.Spec.Topology = seg(map[string]string{"zone": "../a"}) }), "spec.topology.required[0].segments.zone", "value"},
		{"topology key", volumeWith(func(v *CSIVolume) { v.Spec.Topology = seg(map[string]string{"-zone": "a"}) }), "spec.topology.required[0].segments.-zone", "key"},
		{"topology segments", volumeWith(func(v *CSIVolume) { v.Spec.Topology = seg(many(17, func(int) string { return "a" })) }), "spec.topology.required[0].segments", "at most 16"},
		{"topologies many", volumeWith(func(v *CSIVolume) {
			v.Spec.Topology = &VolumeTopologyRequest{Preferred: make([]VolumeTopology, 17)}
		}), "spec.topology.preferred", "at most 16"},
		{"parameters many", volumeWith(func(v *CSIVolume) { v.Spec.Parameters = many(65, func(int) string { return "v" }) }), "spec.parameters", "at most 64"},
		{"parameter value", volumeWith(func(v *CSIVolume) { v.Spec.Parameters = map[string]string{"k": strings.Repeat("v", 4097)} }), "spec.parameters.k", "at most 4096"},
		{"parameters total", volumeWith(func(v *CSIVolume) {
			v.Spec.Parameters = many(10, func(int) string { return strings.Repeat("v", 4000) })
		}), "spec.parameters", "at most 16384 bytes"},
		{"parameter key empty", volumeWith(func(v *CSIVolume) { v.Spec.Parameters = map[string]string{"": "v"} }), `spec.parameters[""]`, "key"},
		{"parameter control", volumeWith(func(v *CSIVolume) { v.Spec.Parameters = map[string]string{"k": "a\x00b"} }), "spec.parameters.k", "control"},
		{"secret path", volumeWith(func(v *CSIVolume) { v.Spec.Secrets = &VolumeSecretsRef{Name: "../other-ns/creds"} }), "spec.secrets.name", "letters"},
		{"secret empty", volumeWith(func(v *CSIVolume) { v.Spec.Secrets = &VolumeSecretsRef{} }), "spec.secrets.name", "required"},
	})
}

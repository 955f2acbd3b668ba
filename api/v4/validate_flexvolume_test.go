package v4

import (
	"fmt"
	"strings"
	"testing"
)

func withFlex(f FlexVolume) Object {
	return appWith(func(a *Application) {
		a.Spec.Template.Spec.Volumes = []PodVolume{{Name: "data", FlexVolume: &f}}
	})
}

// A driver's name becomes a path under the node's plugin directory, run as root: every
// way out of it is refused, naming the field.
func TestFlexVolumeRules(t *testing.T) {
	const f0 = "spec.template.spec.volumes[0].flexVolume"
	drv := func(d string) Object { return withFlex(FlexVolume{Driver: d}) }
	opts := func(m map[string]string) Object { return withFlex(FlexVolume{Driver: "acme/nfs", Options: m}) }
	many, big := map[string]string{}, map[string]string{}
	for i := range 20 {
		big[fmt.Sprintf("k%d", i)] = strings.Repeat("v", MaxFlexOptionSize)
	}
	for i := range MaxFlexOptions + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	runRules(t, []ruleCase{
		{"no driver", drv(""), f0 + ".driver", "required"},
		{"no vendor", drv("nfs"), f0 + ".driver", `"vendor/driver"`},
		{"three parts", drv("acme/nfs/x"), f0 + ".driver", "no other '/'"},
		{"climbs", drv("../../bin/sh"), f0 + ".driver", "vendor/driver"},
		{"dot-dot vendor", drv("../nfs"), f0 + ".driver", "vendor/driver"},
		{"dot-dot driver", drv("acme/.."), f0 + ".driver", "vendor/driver"},
		{"dot driver", drv("acme/."), f0 + ".driver", "vendor/driver"},
		{"absolute", drv("/bin/sh"), f0 + ".driver", "vendor/driver"},
		{"backslash", drv(`acme/nfs\x`), f0 + ".driver", "vendor/driver"},
		{"tilde", drv("acme~x/nfs"), f0 + ".driver", "vendor/driver"},
		{"NUL", drv("acme/nf\x00s"), f0 + ".driver", "vendor/driver"},
		{"empty part", drv("acme/"), f0 + ".driver", "vendor/driver"},
		{"too long", drv("acme/" + strings.Repeat("n", 64)), f0 + ".driver", "at most 63"},
		{"fsType", withFlex(FlexVolume{Driver: "acme/nfs", FSType: "ext4,exec"}), f0 + ".fsType", "file system's name"},
		{"fsType path", withFlex(FlexVolume{Driver: "acme/nfs", FSType: "../x"}), f0 + ".fsType", "file system's name"},
		{"secret name", withFlex(FlexVolume{Driver: "acme/nfs", SecretRef: &LocalObjectReference{Name: "../s"}}), f0 + ".secretRef.name", "letters"},
		{"secret name empty", withFlex(FlexVolume{Driver: "acme/nfs", SecretRef: &LocalObjectReference{}}), f0 + ".secretRef.name", "required"},
		{"reserved key", opts(map[string]string{"kubernetes.io/pod.uid": "x"}), f0 + ".options[kubernetes.io/pod.uid]", "set by the agent"},
		{"reserved key, other case", opts(map[string]string{"Kubernetes.IO/secret/pw": "x"}), f0 + ".options[Kubernetes.IO/secret/pw]", "set by the agent"},
		{"odd key", opts(map[string]string{"a b": "x"}), f0 + ".options[a b]", "letters, digits"},
		{"empty key", opts(map[string]string{"": "x"}), f0 + ".options[]", "letters, digits"},
		{"long key", opts(map[string]string{strings.Repeat("k", 254): "x"}), f0 + ".options[" + strings.Repeat("k", 80) + "...]", "at most 253"},
		{"long value", opts(map[string]string{"k": strings.Repeat("v", MaxFlexOptionSize+1)}), f0 + ".options[k]", "at most 4096"},
		{"NUL value", opts(map[string]string{"k": "a\x00b"}), f0 + ".options[k]", "without NUL"},
		{"too many", opts(many), f0 + ".options", "at most 64 options"},
		{"too big together", opts(big), f0 + ".options", "at most 65536 bytes together"},
	})
}

func TestFlexVolumeAccepted(t *testing.T) {
	for _, f := range []FlexVolume{
		{Driver: "acme/nfs"},
		{Driver: "k8s.io_x/my-driver.v2", FSType: "ext4", ReadOnly: true, SecretRef: &LocalObjectReference{Name: "nfs-creds"},
			Options: map[string]string{"server": "10.0.0.1", "share": "/exports/a", "cert": "-----BEGIN\nabc\n-----END"}},
		{Driver: "a/b", FSType: "fuse.sshfs", Options: map[string]string{"kubernetes.iox": "not reserved"}},
	} {
		if errs := Validate(withFlex(f)); len(errs) > 0 {
			t.Errorf("%+v: unexpected errors %v", f, errs)
		}
	}
}

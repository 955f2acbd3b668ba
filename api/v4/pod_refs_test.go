package v4

import "testing"

func TestPodSpecNames(t *testing.T) {
	pod := &PodSpec{
		Containers: []Container{{ConfigMaps: []ConfigMapRef{{Name: "c-cfg"}}, Secrets: []SecretRef{{SecretName: "c-pw"}},
			ImagePullSecrets: []LocalObjectReference{{Name: "regcred"}}}},
		Processes: []ProcessTask{{ConfigMaps: []ConfigMapRef{{Name: "p-cfg"}}, Secrets: []SecretRef{{SecretName: "p-pw"}}}},
		Volumes: []PodVolume{
			{Name: "a", ConfigMap: &ConfigMapVolume{Name: "v-cfg"}},
			{Name: "b", Secret: &SecretVolume{SecretName: "v-pw"}},
			{Name: "c", FlexVolume: &FlexVolume{Driver: "x/y", SecretRef: &LocalObjectReference{Name: "flex-pw"}}},
			{Name: "d", EmptyDir: &EmptyDirVolume{}},
			{Name: "e", CSI: &CSIVolumeSource{Volume: "data"}},
			{Name: "f", CSIPlugin: &CSIPluginSource{Name: "hp"}},
		},
	}
	for _, tt := range []struct {
		kind Kind
		name string
		want bool
	}{
		{KindConfigMap, "c-cfg", true},
		{KindConfigMap, "p-cfg", true},
		{KindSecret, "c-pw", true},
		{KindSecret, "p-pw", true},
		{KindSecret, "regcred", true}, // the server hands an image pull secret to the agent
		{KindConfigMap, "regcred", false},
		{KindConfigMap, "c-pw", false}, // a secret's name is not a configmap's
		{KindSecret, "p-cfg", false},
		{KindConfigMap, "other", false},
		{KindConfigMap, "v-cfg", true}, // a volume's object is the pod's too
		{KindSecret, "v-pw", true},
		{KindSecret, "flex-pw", true}, // the FlexVolume driver gets it
		{KindConfigMap, "v-pw", false},
		{KindConfigMap, "flex-pw", false},
		{KindService, "c-cfg", false},
		{KindVolume, "data", true}, // a csi volume claims the volume object
		{KindSecret, "data", false},
		{KindVolume, "hp", false}, // a plugin's socket directory is no volume object
		{KindVolume, "v-cfg", false},
	} {
		if got := pod.Names(tt.kind, tt.name); got != tt.want {
			t.Errorf("Names(%s, %s) = %v, want %v", tt.kind, tt.name, got, tt.want)
		}
	}
	if (&PodSpec{}).Names(KindSecret, "") {
		t.Error("an empty pod names a secret")
	}
}

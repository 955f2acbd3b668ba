package v4

import "slices"

// Names reports whether a container, a process or a volume of the pod names the configmap,
// the secret or the volume (kind) called name, a container's imagePullSecrets included:
// the server asks before such a configmap or secret is deleted, and before it hands one
// to an agent, or grants an agent's claim of a volume, whose task groups must use it.
func (p *PodSpec) Names(kind Kind, name string) bool {
	configMap := func(r ConfigMapRef) bool { return kind == KindConfigMap && r.Name == name }
	secret := func(r SecretRef) bool { return kind == KindSecret && r.SecretName == name }
	pullSecret := func(r LocalObjectReference) bool { return kind == KindSecret && r.Name == name }
	for i := range p.Containers {
		c := &p.Containers[i]
		if slices.ContainsFunc(c.ConfigMaps, configMap) || slices.ContainsFunc(c.Secrets, secret) || slices.ContainsFunc(c.ImagePullSecrets, pullSecret) {
			return true
		}
	}
	for i := range p.Processes {
		if t := &p.Processes[i]; slices.ContainsFunc(t.ConfigMaps, configMap) || slices.ContainsFunc(t.Secrets, secret) {
			return true
		}
	}
	return slices.ContainsFunc(p.Volumes, func(v PodVolume) bool { return v.names(kind, name) })
}

// names reports whether the pod volume is the configmap, secret or volume object (kind)
// called name, or a FlexVolume whose driver gets that secret.
func (v *PodVolume) names(kind Kind, name string) bool {
	switch {
	case v.ConfigMap != nil:
		return kind == KindConfigMap && v.ConfigMap.Name == name
	case v.Secret != nil:
		return kind == KindSecret && v.Secret.SecretName == name
	case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
		return kind == KindSecret && v.FlexVolume.SecretRef.Name == name
	case v.CSI != nil:
		return kind == KindVolume && v.CSI.Volume == name
	}
	return false
}

package v4

import (
	"fmt"
	"regexp"
	"slices"
)

// podVolumeName is the form of a pod volume's name (a DNS label, as Kubernetes has it).
var podVolumeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// validatePodVolumes checks the pod's volumes: unique names, exactly one source each,
// and each source's own rules.
func validatePodVolumes(path string, p *PodSpec, errs *FieldErrors) {
	if len(p.Volumes) > MaxPodVolumes {
		errs.add(path+".volumes", "a pod has at most %d volumes, got %d", MaxPodVolumes, len(p.Volumes))
		return
	}
	seen := map[string]bool{}
	claimed := map[string]int{} // csi volume -> the pod volume that claims it
	for i := range p.Volumes {
		v := &p.Volumes[i]
		vp := fmt.Sprintf("%s.volumes[%d]", path, i)
		switch {
		case !podVolumeName.MatchString(v.Name):
			errs.add(vp+".name", "must be a DNS label (lowercase letters, digits and '-', at most 63), got %q", truncate(v.Name, 80))
		case seen[v.Name]:
			errs.add(vp+".name", "%q is the name of another volume of the pod", v.Name)
		}
		seen[v.Name] = true
		sources := 0
		for _, set := range []bool{v.EmptyDir != nil, v.ConfigMap != nil, v.Secret != nil, v.FlexVolume != nil, v.CSI != nil, v.CSIPlugin != nil} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			errs.add(vp, "needs exactly one of emptyDir, configMap, secret, flexVolume, csi and csiPlugin, got %d", sources)
		}
		switch {
		case v.EmptyDir != nil:
			validateEmptyDir(vp+".emptyDir", v.EmptyDir, p, errs)
		case v.ConfigMap != nil:
			validateConfigMapVolume(vp+".configMap", v.ConfigMap, errs)
		case v.Secret != nil:
			validateSecretVolume(vp+".secret", v.Secret, errs)
		case v.FlexVolume != nil:
			validateFlexVolume(vp+".flexVolume", v.FlexVolume, errs)
		case v.CSI != nil:
			checkDataName(vp+".csi.volume", v.CSI.Volume, errs)
			checkClaimedOnce(vp+".csi.volume", v.CSI.Volume, i, claimed, errs)
		case v.CSIPlugin != nil:
			checkCSIPluginName(vp+".csiPlugin.name", v.CSIPlugin.Name, errs)
		}
	}
	validatePodVolumeMounts(path, p, errs)
}

// checkClaimedOnce refuses a volume object that a pod claims from two of its volumes: a
// task group holds one claim per volume (read or write), and two mounts of one volume
// are two mounts of one pod volume.
func checkClaimedOnce(vp, volume string, i int, claimed map[string]int, errs *FieldErrors) {
	if j, dup := claimed[volume]; dup {
		errs.add(vp, "volume %q is claimed by volumes[%d] already: mount that pod volume twice instead", truncate(volume, 80), j)
		return
	}
	claimed[volume] = i
}

// validatePodVolumeMounts checks every task's mounts of the pod's volumes.
func validatePodVolumeMounts(path string, p *PodSpec, errs *FieldErrors) {
	for i := range p.Containers {
		for j, v := range p.Containers[i].Volumes {
			checkPodVolumeRef(fmt.Sprintf("%s.containers[%d].volumes[%d].volume", path, i, j), v.Volume, p, errs)
		}
	}
	for i := range p.Processes {
		for j, v := range p.Processes[i].Volumes {
			checkPodVolumeRef(fmt.Sprintf("%s.processes[%d].volumes[%d].volume", path, i, j), v.Volume, p, errs)
		}
	}
}

// checkPodVolumeRef checks a mount of a pod volume: the volume exists, and the mount
// takes no host path and is no instance volume.
func checkPodVolumeRef(vp string, m VolumeMount, p *PodSpec, errs *FieldErrors) {
	if m.PodVolume == "" {
		return
	}
	if !slices.ContainsFunc(p.Volumes, func(v PodVolume) bool { return v.Name == m.PodVolume }) {
		errs.add(vp+".podVolume", "the pod has no volume %q", truncate(m.PodVolume, 80))
	}
	if m.HostPath != "" {
		errs.add(vp+".hostPath", "must be empty when the volume is the pod's")
	}
	if m.Instance {
		errs.add(vp+".instance", "a volume is the pod's or the instance's, not both")
	}
}

package v4

import (
	"reflect"
	"strings"
)

// bcsIgnored lists the keys that BCS's v4 types declare (its decoder accepts them) and
// berth accepts without acting on them, by the type of the object that holds them, with
// what BCS did with each: the warning says why berth ignores it. It also lists the few
// keys that BCS's own templates and client handbook put in documents although its types
// lack them (its decoder dropped them, so those documents ran). A key that is neither
// berth's nor BCS's is still an error with a suggestion. docs/compat.md lists them all.
var bcsIgnored = map[reflect.Type]map[string]string{
	reflect.TypeFor[ObjectMeta](): {
		"clusterName": "the cluster is the one that stores the object",
	},
	reflect.TypeFor[TemplateMeta](): {
		"clusterName":       "the cluster is the one that stores the object",
		"creationTimestamp": "berth stamps the task groups it creates",
	},
	reflect.TypeFor[Workload](): {
		"updatePolicy": "BCS parsed it and never used it",
	},
	reflect.TypeFor[Deployment](): {
		"updatePolicy": "BCS parsed it and never used it",
	},
	reflect.TypeFor[WorkloadSpec](): {
		"selector": "an application's instances are its own; BCS never read it (a deployment's selector is kept)",
	},
	reflect.TypeFor[DeploymentSpec](): {
		"pauseDeployment": "BCS never read it: pause a rolling update with berth rollout pause",
	},
	reflect.TypeFor[DaemonsetSpec](): {
		"instance": "a daemonset runs one instance on each eligible node, as in BCS",
		"selector": "BCS never read it",
	},
	reflect.TypeFor[PodSpec](): {
		"nodeSelector": "Kubernetes' field, which BCS's Mesos scheduler never read: use a constraint (hostname or attribute CLUSTER, LIKE)",
	},
	reflect.TypeFor[Constraint](): {
		"nodeSelector": "BCS's scheduler never read it: use a constraint item (CLUSTER, LIKE)",
	},
	reflect.TypeFor[Port](): {
		"hostIP": "ports are published on the node's address; BCS dropped it",
	},
	reflect.TypeFor[VolumeMount](): {
		"subPath": "BCS dropped it: mount the directory itself",
	},
	reflect.TypeFor[ConfigMapItem](): {
		"subPath": "BCS never read it: the item's keyOrPath is the file",
	},
	reflect.TypeFor[ProcessTask](): {
		"checkCmd":  "BCS's process executor never ran it: use a health check of type COMMAND",
		"procGroup": "BCS never read it",
	},
	reflect.TypeFor[ExtendedResource](): {
		"innerIP":  "a node's setting, not a request's",
		"capacity": "a node's setting, not a request's",
		"socket":   "a node's setting (the device plugin's socket), not a request's",
	},
	reflect.TypeFor[Container](): {
		"cpuset": "older BCS's flag, which its scheduler no longer read",
	},
	reflect.TypeFor[RollingUpdate](): {
		"autoUpgrade": "BCS's client handbook lists it, its types do not: BCS dropped it",
		"pause":       "BCS's client handbook lists it, its types do not: BCS dropped it; pause with berth rollout pause",
	},
	reflect.TypeFor[HealthCheck](): {
		"protocol": "BCS's deployment template puts it here, its types do not: BCS dropped it; the check's type says the protocol",
		"path":     "BCS's deployment template puts it here, its types do not: BCS dropped it; an HTTP check's path is http.path",
	},
	reflect.TypeFor[ServicePort](): {
		"containerPort": "BCS's blue-green guide puts it here, its types do not: BCS dropped it; the service reaches targetPort, or the instances' port of the same name",
	},
	reflect.TypeFor[Resources](): {
		"externals": "older BCS's form of extendedResources, which its scheduler replaced: use extendedResources",
	},
}

// ignoredKey reports whether key (any case) is one of t's ignored BCS keys, or of a struct
// that t embeds, and why.
func ignoredKey(t reflect.Type, key string) (string, bool) {
	for k, why := range bcsIgnored[t] {
		if strings.EqualFold(k, key) {
			return why, true
		}
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			if why, ok := ignoredKey(f.Type, key); ok {
				return why, true
			}
		}
	}
	return "", false
}

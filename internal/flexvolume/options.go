package flexvolume

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// The options the agent adds to a volume's own, as the kubelet names them.
const (
	optFSType       = "kubernetes.io/fsType"
	optReadWrite    = "kubernetes.io/readwrite"
	optPodName      = "kubernetes.io/pod.name"
	optPodNamespace = "kubernetes.io/pod.namespace"
	optPodUID       = "kubernetes.io/pod.uid"
	optSecretPrefix = "kubernetes.io/secret/"
)

// maxOptionsJSON bounds the options argument: Linux refuses one argument over 128 KiB
// (MAX_ARG_STRLEN), and the convention passes the options on the command line.
const maxOptionsJSON = 120 << 10

// optionsJSON is the JSON options argument of pod's volume v with its secret's data,
// as the kubelet passes it: the spec's options, then the agent's own keys, which win.
func optionsJSON(pod string, v *v4.FlexVolume, secret map[string][]byte) (string, error) {
	opts := make(map[string]string, len(v.Options)+len(secret)+5)
	for k, val := range v.Options {
		if strings.HasPrefix(strings.ToLower(k), v4.FlexReservedPrefix) {
			continue // the agent's; admission refuses them, a stale spec must not override them either
		}
		opts[k] = val
	}
	ns, name, _ := strings.Cut(pod, "/")
	opts[optFSType] = v.FSType
	opts[optReadWrite] = "rw"
	if v.ReadOnly {
		opts[optReadWrite] = "ro"
	}
	opts[optPodName], opts[optPodNamespace], opts[optPodUID] = name, ns, podUID(pod)
	for k, data := range secret {
		opts[optSecretPrefix+k] = base64.StdEncoding.EncodeToString(data)
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return "", err
	}
	if len(b) > maxOptionsJSON {
		return "", fmt.Errorf("the options of the FlexVolume driver %s are %d bytes of JSON, more than the %d a command line takes", v.Driver, len(b), maxOptionsJSON)
	}
	return string(b), nil
}

// podUID is the pod's stable identifier in the form of a UUID, derived from its name:
// berth's pods have no UID of their own, and drivers may build paths from it, which
// "namespace/name" would break.
func podUID(pod string) string {
	h := sha256.Sum256([]byte(pod))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

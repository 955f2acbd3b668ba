package docker

import "github.com/berthhq/berth/internal/driver/cni"

// podState is what CNI DEL needs and Docker does not know, in DataDir/pods/<id>.json
// (cni.States, shared with the containerd driver).
type podState = cni.PodState

// errForeignPod is a pod state of another cluster's agent.
var errForeignPod = cni.ErrForeignState

func (d *Driver) podStates() cni.States { return cni.States{Dir: d.podsDir, Cluster: d.owner.Cluster} }

// loadPod reads a pod's state; nil when it has none (or the ID names no pod),
// errForeignPod (wrapped) when it is another cluster's.
func (d *Driver) loadPod(id string) (*podState, error) {
	if !validID(id) {
		return nil, nil
	}
	return d.podStates().Load(id)
}

func (d *Driver) savePod(p *podState) error { return d.podStates().Save(p) }

func (d *Driver) removePod(id string) error { return d.podStates().Remove(id) }

// podIDsFromFiles lists the pods with a state file, but for other clusters' states.
func (d *Driver) podIDsFromFiles() ([]string, error) { return d.podStates().IDs() }

package gcefake

import "github.com/berthhq/berth/internal/csi/csidriverbuild"

// Driver is the Google Compute Engine persistent disk CSI driver, the real third-party
// plugin the tests run against the fake cloud, its controller and node services in one
// process. Its main refuses to start without a version stamped in. .ci/run prebuilds
// this version into the cache: change both together.
var Driver = &csidriverbuild.Driver{
	Name:    "gce-pd",
	Pkg:     "sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/cmd/gce-pd-csi-driver",
	Version: "v1.28.1",
	Ldflags: "-X main.version=v1.28.1",
	BinEnv:  "BERTH_CSI_GCEPD",
}

const (
	// DriverName is the name the driver answers GetPluginInfo with.
	DriverName = "pd.csi.storage.gke.io"
	// NodeID is the node ID the driver makes of the metadata server's answers.
	NodeID = "projects/" + Project + "/zones/" + Zone + "/instances/" + Instance
	// ZoneKey is the topology key of the driver's zones.
	ZoneKey = "topology.gke.io/zone"
)

// DriverArgs are the driver's flags after --endpoint: both services, the instance's
// name, the Compute API of this cloud. The driver also needs GCE_METADATA_HOST set to
// MetadataHost and a HOME without gcloud credentials.
func (c *Cloud) DriverArgs() []string {
	return []string{"--run-controller-service", "--run-node-service",
		"--node-name", Instance, "--compute-endpoint", c.ComputeURL(), "--v=4"}
}

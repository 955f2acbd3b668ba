package cli

import (
	"strings"
	"testing"
)

const volumeJSON = `{"apiVersion":"v4","kind":"volume","metadata":{"name":"data","namespace":"defaultGroup","creationTimestamp":"2026-11-22T11:55:00Z"},
	"spec":{"plugin":"hostpath.csi.k8s.io","capacity":{"min":"1G","max":"2G"},"accessMode":"single-node-writer","attachmentMode":"file-system",
		"mountOptions":{"fsType":"ext4","flags":["noatime"]},"topology":{"required":[{"segments":{"zone":"a","rack":"r1"}}]},
		"parameters":{"kind":"fast"},"secrets":{"name":"creds"}},
	"status":{"phase":"Available","externalID":"vol-123","capacity":1073741824,"claims":[{"taskgroup":"0.web.defaultGroup.berth.1","node":"n1","mode":"write"}]}}`

func TestGetAndDescribeVolume(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/volumes", 200, `{"kind":"List","items":[`+volumeJSON+`]}`)
	api.json("GET /v1/namespaces/defaultGroup/volumes/data", 200, volumeJSON)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)

	r := runCLIOK(t, url, "", "get", "volumes")
	fields := strings.Fields(r.stdout)
	for _, want := range []string{"PLUGIN", "ACCESS", "CAPACITY", "PHASE", "CLAIMS", "hostpath.csi.k8s.io", "single-node-writer", "Available"} {
		if !strings.Contains(strings.Join(fields, " "), want) {
			t.Errorf("get volumes =\n%s\nlacks %q", r.stdout, want)
		}
	}

	r = runCLIOK(t, url, "", "describe", "vol", "data")
	wantContains(t, r.stdout,
		"Plugin:           hostpath.csi.k8s.io\n",
		"External ID:      vol-123\n",
		"Access Mode:      single-node-writer\n",
		"Mount:            fsType=ext4 flags=noatime\n",
		"Topology:         required {rack=r1,zone=a}; preferred <none>\n",
		"Secrets:          creds\n",
		"Phase:            Available\n",
		"0.web.defaultGroup.berth.1 on n1 (write)\n",
	)
}

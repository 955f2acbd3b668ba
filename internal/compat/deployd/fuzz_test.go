package deployd

import (
	"encoding/json"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Any body is either refused with an error or becomes a document that berth's own
// decoder parses or refuses cleanly; nothing panics, and an accepted pod group keeps its
// name and count.
func FuzzPodGroupSpec(f *testing.F) {
	for _, seed := range []string{
		`{"Name":"hello.web.web","Namespace":"hello","NumInstances":2,"RestartPolicy":1,"Pod":{"Containers":[{"Image":"a","Command":["x"],"Expose":5000,"CpuLimit":1,"MemoryLimit":536870912,"Env":["A=b"],"SystemVolumes":["/a:/b:ro"]}],"Filters":["constraint:node==n1","affinity:x==y"],"Dependencies":[{"PodName":"rpc.portal","Policy":1}],"HealthConfig":{"cmd":"true","options":{"interval":1}}}}`,
		`{"Name":"a","Namespace":"b","NumInstances":0}`,
		`{"name":"A.b","namespace":"x","numinstances":1,"pod":{"containers":[{"image":""}]}}`,
		`[]`, `{"Pod":{"Filters":["constraint:node"]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var pg PodGroupSpec
		if decodeStrict(body, &pg, "PodGroupSpec") != nil {
			return
		}
		c, err := deploymentOf(&pg)
		if err != nil {
			return
		}
		doc, err := json.Marshal(c.obj)
		if err != nil {
			t.Fatalf("encode the deployment: %v", err)
		}
		docs, err := v4.Parse(doc)
		if err != nil {
			return // berth's validation refuses it, naming the field
		}
		d := docs[0].Object.(*v4.Deployment)
		if d.Spec.Instance != pg.NumInstances || d.Metadata.Annotations[NameAnnotation] != pg.Name {
			t.Fatalf("pod group %q with %d instances became %+v", pg.Name, pg.NumInstances, d.Metadata)
		}
	})
}

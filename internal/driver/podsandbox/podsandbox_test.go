package podsandbox

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

func tarEntries(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out[h.Name] = data
		if h.Typeflag == tar.TypeSymlink {
			out[h.Name] = []byte("-> " + h.Linkname)
		}
	}
}

func TestRootfsAndArchive(t *testing.T) {
	if !isStatic("/bin/busybox") && !isStatic("/usr/bin/busybox") {
		t.Skip("skipping: no static busybox (apt-get install busybox-static)")
	}
	layer, err := Rootfs()
	if err != nil {
		t.Fatal(err)
	}
	files := tarEntries(t, layer)
	if string(files["bin/sleep"]) != "-> busybox" || len(files["bin/busybox"]) == 0 {
		t.Fatalf("rootfs: %d entries, sleep %q", len(files), files["bin/sleep"])
	}
	archive, err := OCIArchive("docker.io/"+Image, layer, Entrypoint)
	if err != nil {
		t.Fatal(err)
	}
	blobs := tarEntries(t, archive.Bytes())
	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(blobs["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %s %v", blobs["index.json"], err)
	}
	m := index.Manifests[0]
	if m.Annotations["io.containerd.image.name"] != "docker.io/berth/pod-sandbox:2" {
		t.Errorf("image name %v", m.Annotations)
	}
	if _, ok := blobs["blobs/sha256/"+m.Digest[len("sha256:"):]]; !ok {
		t.Errorf("manifest blob %s missing", m.Digest)
	}
	if isStatic("/nonexistent") {
		t.Error("a missing file taken for a static executable")
	}
}

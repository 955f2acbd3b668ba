package cli

import (
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// `berth get artifactrepositories` shows where the artifacts go, not the credentials.
func TestArtifactRepositoryColumns(t *testing.T) {
	a := &v4.ArtifactRepository{Spec: v4.ArtifactRepositorySpec{Default: true, S3: &v4.S3ArtifactRepository{
		Endpoint: "minio:9000", Bucket: "arts", Insecure: true, AccessKeySecret: v4.SecretKeyRef{Name: "creds", Key: "ak"}}}}
	c := columnsFor(v4.KindArtifactRepository, time.Time{})
	if got, want := strings.Join(c.headers, " "), "ENDPOINT BUCKET PREFIX DEFAULT"; got != want {
		t.Errorf("headers %q, want %q", got, want)
	}
	if got, want := strings.Join(c.values(a), " "), "http://minio:9000 arts <none> true"; got != want {
		t.Errorf("values %q, want %q", got, want)
	}
}

package v4

import (
	"strings"
	"testing"
)

func TestValidateArtifactRepository(t *testing.T) {
	valid := func() *ArtifactRepository {
		return &ArtifactRepository{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindArtifactRepository},
			Metadata: ObjectMeta{Name: "s3", Namespace: "ml"},
			Spec: ArtifactRepositorySpec{S3: &S3ArtifactRepository{Endpoint: "minio.example.com:9000", Bucket: "arts", Region: "us-east-1",
				KeyPrefix: "berth/", AccessKeySecret: SecretKeyRef{Name: "creds", Key: "ak"}, SecretKeySecret: SecretKeyRef{Name: "creds", Key: "sk"}}}}
	}
	cases := []struct {
		name  string
		edit  func(*ArtifactRepository)
		field string // "" for valid
		msg   string
	}{
		{"valid", func(*ArtifactRepository) {}, "", ""},
		{"an IP endpoint", func(a *ArtifactRepository) { a.Spec.S3.Endpoint = "[2001:db8::1]:443" }, "", ""},
		{"no s3", func(a *ArtifactRepository) { a.Spec.S3 = nil }, "spec.s3", "required"},
		{"a scheme", func(a *ArtifactRepository) { a.Spec.S3.Endpoint = "https://s3.example.com" }, "spec.s3.endpoint", "no scheme"},
		{"a path", func(a *ArtifactRepository) { a.Spec.S3.Endpoint = "s3.example.com/x" }, "spec.s3.endpoint", "no scheme, path"},
		{"a bad port", func(a *ArtifactRepository) { a.Spec.S3.Endpoint = "s3.example.com:0" }, "spec.s3.endpoint", "port"},
		{"no endpoint", func(a *ArtifactRepository) { a.Spec.S3.Endpoint = "" }, "spec.s3.endpoint", "required"},
		{"a bucket in capitals", func(a *ArtifactRepository) { a.Spec.S3.Bucket = "Arts" }, "spec.s3.bucket", "lowercase"},
		{"a bucket with ..", func(a *ArtifactRepository) { a.Spec.S3.Bucket = "a..b" }, "spec.s3.bucket", "lowercase"},
		{"a region with spaces", func(a *ArtifactRepository) { a.Spec.S3.Region = "us east" }, "spec.s3.region", "lowercase"},
		{"a prefix climbing out", func(a *ArtifactRepository) { a.Spec.S3.KeyPrefix = "a/../b" }, "spec.s3.keyPrefix", `".."`},
		{"an absolute prefix", func(a *ArtifactRepository) { a.Spec.S3.KeyPrefix = "/a" }, "spec.s3.keyPrefix", "segments"},
		{"a long prefix", func(a *ArtifactRepository) { a.Spec.S3.KeyPrefix = strings.Repeat("a", 513) }, "spec.s3.keyPrefix", "at most 512"},
		{"no secret name", func(a *ArtifactRepository) { a.Spec.S3.AccessKeySecret.Name = "" }, "spec.s3.accessKeySecret.name", "required"},
		{"no secret key", func(a *ArtifactRepository) { a.Spec.S3.SecretKeySecret.Key = "" }, "spec.s3.secretKeySecret.key", "required"},
		{"a key with a slash", func(a *ArtifactRepository) { a.Spec.S3.SecretKeySecret.Key = "a/b" }, "spec.s3.secretKeySecret.key", "letters"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := valid()
			c.edit(a)
			errs := Validate(a)
			if c.field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Field == c.field && strings.Contains(e.Message, c.msg) {
					return
				}
			}
			t.Fatalf("errors %v, want %s: ...%s...", errs, c.field, c.msg)
		})
	}
}

func TestCheckArtifactKey(t *testing.T) {
	for _, k := range []string{"ns/wf/uid/node/out", "a", "a/b.tgz", "a/..b"} {
		if err := CheckArtifactKey(k); err != nil {
			t.Errorf("%q refused: %v", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", "a/../b", "./a", "a/\x00", `a\b`, strings.Repeat("a", MaxArtifactKeyLen+1)} {
		if CheckArtifactKey(k) == nil {
			t.Errorf("%q accepted", k)
		}
	}
}

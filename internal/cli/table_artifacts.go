package cli

import (
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// artifactRepositoryColumns show where an artifactrepository keeps artifacts (never its
// credentials, which stay in the secrets it names).
func artifactRepositoryColumns() kindColumns {
	return kindColumns{[]string{"ENDPOINT", "BUCKET", "PREFIX", "DEFAULT"}, func(o v4.Object) []string {
		a, ok := o.(*v4.ArtifactRepository)
		if !ok || a.Spec.S3 == nil {
			return []string{none, none, none, ""}
		}
		s := a.Spec.S3
		endpoint := "https://" + s.Endpoint
		if s.Insecure {
			endpoint = "http://" + s.Endpoint
		}
		return []string{endpoint, s.Bucket, orNone(s.KeyPrefix), strconv.FormatBool(a.Spec.Default)}
	}}
}

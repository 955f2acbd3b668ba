package cli

import (
	"context"
	"strings"

	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// `berth apply -f` takes the cluster-wide documents that have routes of their own
// (priority classes, admission webhook configurations) in the same stream as the
// namespaced kinds: the server's /v1/apply refuses them as unknown kinds, so apply puts
// each of them on its own route, before the stream, and sends the rest as one request.
// Before, because the stream's workloads may name a class the same files define.

// clusterPut puts one cluster-wide document (priorityclass_cmd.go, webhook.go) and says
// what it put, as a line of apply's answer.
type clusterPut func(ctx context.Context, c *client.Client, d document, body []byte) (v4.ApplyResult, error)

// clusterDocKinds maps the kinds a cluster-wide document may carry, lowercased, to the
// function that puts it.
var clusterDocKinds = map[string]clusterPut{
	string(v4.KindPriorityClass):              applyPriorityClassDoc,
	"priorityclasses":                         applyPriorityClassDoc,
	v4.KindAdmissionWebhook:                   applyWebhookDoc,
	strings.ToLower(v4.WebhookKindBCS):        applyWebhookDoc,
	strings.ToLower(v4.WebhookKindMutating):   applyWebhookDoc,
	strings.ToLower(v4.WebhookKindValidating): applyWebhookDoc,
}

// clusterDoc is a cluster-wide document of the files, as JSON, and how it is put.
type clusterDoc struct {
	doc  document
	body []byte
	put  clusterPut
}

// splitClusterDocs takes the cluster-wide documents out of docs: what is left goes to
// /v1/apply in one stream. Only a document's kind is read (docIdentity, delete.go), and
// only the cluster-wide ones are converted to JSON. A document that does not parse stays
// in the stream, whose answer names its problem with its file and line.
func splitClusterDocs(docs []document) (stream []document, cluster []clusterDoc) {
	for _, d := range docs {
		if put, body, ok := clusterDocOf(d); ok {
			cluster = append(cluster, clusterDoc{doc: d, body: body, put: put})
		} else {
			stream = append(stream, d)
		}
	}
	return stream, cluster
}

// clusterDocOf is how d is put and d as JSON, when d is a cluster-wide document.
func clusterDocOf(d document) (clusterPut, []byte, bool) {
	var id docIdentity
	if yaml.Unmarshal(d.raw, &id) != nil {
		return nil, nil, false
	}
	put, ok := clusterDocKinds[strings.ToLower(id.Kind)]
	if !ok {
		return nil, nil, false
	}
	body, err := documentJSON(d)
	return put, body, err == nil
}

// putClusterDocs puts the cluster-wide documents in order, stopping at the first the
// server refuses (the error names its file), and returns what each put.
func putClusterDocs(ctx context.Context, c *client.Client, docs []clusterDoc) ([]v4.ApplyResult, error) {
	results := make([]v4.ApplyResult, 0, len(docs))
	for _, d := range docs {
		r, err := d.put(ctx, c, d.doc, d.body)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

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

// clusterKind is how apply puts a cluster-wide kind, and how it undoes that put.
type clusterKind struct {
	put    clusterPut
	undoOf undoReader // apply_undo.go
}

// clusterDocKinds maps the kinds a cluster-wide document may carry, lowercased, to how
// it is put.
var clusterDocKinds = map[string]clusterKind{
	string(v4.KindPriorityClass):              {applyPriorityClassDoc, priorityClassUndo},
	"priorityclasses":                         {applyPriorityClassDoc, priorityClassUndo},
	v4.KindAdmissionWebhook:                   {applyWebhookDoc, webhookUndo},
	strings.ToLower(v4.WebhookKindBCS):        {applyWebhookDoc, webhookUndo},
	strings.ToLower(v4.WebhookKindMutating):   {applyWebhookDoc, webhookUndo},
	strings.ToLower(v4.WebhookKindValidating): {applyWebhookDoc, webhookUndo},
}

// clusterDoc is a cluster-wide document of the files, as JSON, and how it is put.
type clusterDoc struct {
	doc  document
	body []byte
	kind clusterKind
}

// splitClusterDocs takes the cluster-wide documents out of docs: what is left goes to
// /v1/apply in one stream. Only a document's kind is read (docIdentity, delete.go), and
// only the cluster-wide ones are converted to JSON. A document that does not parse stays
// in the stream, whose answer names its problem with its file and line.
func splitClusterDocs(docs []document) (stream []document, cluster []clusterDoc) {
	for _, d := range docs {
		if kind, body, ok := clusterDocOf(d); ok {
			cluster = append(cluster, clusterDoc{doc: d, body: body, kind: kind})
		} else {
			stream = append(stream, d)
		}
	}
	return stream, cluster
}

// clusterDocOf is how d is put and d as JSON, when d is a cluster-wide document.
func clusterDocOf(d document) (clusterKind, []byte, bool) {
	var id docIdentity
	if yaml.Unmarshal(d.raw, &id) != nil {
		return clusterKind{}, nil, false
	}
	kind, ok := clusterDocKinds[strings.ToLower(id.Kind)]
	if !ok {
		return clusterKind{}, nil, false
	}
	body, err := documentJSON(d)
	return kind, body, err == nil
}

// putClusterDocs puts the cluster-wide documents in order, stopping at the first the
// server refuses (the error names its file), and returns what each put and how to undo
// the puts (undoPuts), read before each.
func putClusterDocs(ctx context.Context, c *client.Client, docs []clusterDoc) ([]v4.ApplyResult, []undo, error) {
	results := make([]v4.ApplyResult, 0, len(docs))
	undos := make([]undo, 0, len(docs))
	for _, d := range docs {
		u, err := undoOf(ctx, c, d)
		if err != nil {
			return results, undos, err
		}
		r, err := d.kind.put(ctx, c, d.doc, d.body)
		if err != nil {
			return results, undos, err
		}
		u.put = r
		results, undos = append(results, r), append(undos, u)
	}
	return results, undos, nil
}

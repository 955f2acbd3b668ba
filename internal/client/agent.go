package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// The agent protocol (docs/agent.md): the calls a berth agent makes. They need the node's
// client certificate (HTTPClient with getCert), except AgentCertificate, which takes the
// join token (WithBearerToken).

// AgentRegister creates the agent's node or updates what the agent owns, and returns the
// stored node.
func (c *Client) AgentRegister(ctx context.Context, n *v4.Node) (*v4.Node, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encode node %s: %w", n.Metadata.Name, err)
	}
	return c.nodeCall(ctx, request{method: http.MethodPost, path: "/v1/agent/register", body: body})
}

// AgentHeartbeat tells the server the node is alive (404 when the node was deleted).
func (c *Client) AgentHeartbeat(ctx context.Context, node string, hb v4.AgentHeartbeat) error {
	return c.doNoAnswerJSON(ctx, http.MethodPut, agentNodePath(node)+"/heartbeat", hb, "heartbeat")
}

// AgentTaskGroups lists the task groups bound to node and the revision of the read (a
// watch from it misses nothing).
func (c *Client) AgentTaskGroups(ctx context.Context, node string) ([]*v4.TaskGroup, string, error) {
	var body listBody
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: agentNodePath(node) + "/taskgroups"}, &body); err != nil {
		return nil, "", err
	}
	out := make([]*v4.TaskGroup, 0, len(body.Items))
	for i, raw := range body.Items {
		var tg v4.TaskGroup
		if err := json.Unmarshal(raw, &tg); err != nil {
			return nil, "", fmt.Errorf("list task groups of node %s: item %d: %w", node, i, err)
		}
		out = append(out, &tg)
	}
	return out, body.ResourceVersion, nil
}

// AgentWatchTaskGroups streams the changes of node's task groups after revision rv (with
// rv "", an ADDED per existing one first). The channel behaves like Watch's.
func (c *Client) AgentWatchTaskGroups(ctx context.Context, node, rv string) (<-chan WatchEvent, error) {
	return c.watchPath(ctx, agentNodePath(node)+"/taskgroups", v4.KindTaskGroup, rv, "watch task groups of node "+node)
}

// Catalog is every service and endpoints object of the cluster, as an agent lists them.
type Catalog struct {
	Services, Endpoints *ObjectList
}

// AgentCatalog lists every service and endpoints object for an agent, with the revision
// of each kind's read.
func (c *Client) AgentCatalog(ctx context.Context) (*Catalog, error) {
	var body v4.Catalog[json.RawMessage]
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: agentCatalogPath}, &body); err != nil {
		return nil, err
	}
	out := &Catalog{}
	for _, l := range []struct {
		body listBody
		kind v4.Kind
		dst  **ObjectList
	}{{body.Services, v4.KindService, &out.Services}, {body.Endpoints, v4.KindEndpoint, &out.Endpoints}} {
		list := &ObjectList{ResourceVersion: l.body.ResourceVersion, Items: make([]v4.Object, 0, len(l.body.Items))}
		for i, raw := range l.body.Items {
			obj, err := decodeObject(raw, l.kind)
			if err != nil {
				return nil, fmt.Errorf("list the catalog: %s %d: %w", l.kind.Plural(), i, err)
			}
			list.Items = append(list.Items, obj)
		}
		*l.dst = list
	}
	return out, nil
}

// agentCatalogPath is where agents read the catalog.
const agentCatalogPath = "/v1/agent/catalog"

// AgentWatchCatalog streams the changes of every service and endpoints object after the
// revisions of a list (both kinds interleaved: after a break, list again). The channel
// behaves like Watch's.
func (c *Client) AgentWatchCatalog(ctx context.Context, cat *Catalog) (<-chan WatchEvent, error) {
	q := url.Values{"watch": {"true"}, "services": {cat.Services.ResourceVersion}, "endpoints": {cat.Endpoints.ResourceVersion}}
	return c.streamEvents(ctx, request{method: http.MethodGet, path: agentCatalogPath, query: q}, v4.KindService, "watch the catalog")
}

// AgentPutStatus writes a task group's status (404 when the task group is gone).
func (c *Client) AgentPutStatus(ctx context.Context, ns, name string, st v4.TaskGroupStatus) error {
	path := "/v1/agent/taskgroups/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/status"
	return c.doNoAnswerJSON(ctx, http.MethodPut, path, st, "status of "+ns+"/"+name)
}

// AgentPutStatuses writes several task groups' statuses of node in one request and
// returns what became of each (a server before the route answers 404 for the whole
// request).
func (c *Client) AgentPutStatuses(ctx context.Context, node string, sts v4.AgentStatuses) (v4.AgentStatusesResult, error) {
	var out v4.AgentStatusesResult
	body, err := json.Marshal(sts)
	if err != nil {
		return out, fmt.Errorf("encode statuses: %w", err)
	}
	err = c.doJSON(ctx, request{method: http.MethodPost, path: agentNodePath(node) + "/statuses", body: body}, &out)
	if err == nil && len(out.Results) != len(sts.TaskGroups) {
		err = fmt.Errorf("statuses: %d answers to %d statuses", len(out.Results), len(sts.TaskGroups))
	}
	return out, err
}

// AgentReport sends the full report and returns the task groups the server does not know.
func (c *Client) AgentReport(ctx context.Context, node string, rep v4.AgentReport) (v4.AgentReportResult, error) {
	var out v4.AgentReportResult
	if rep.TaskGroups == nil {
		rep.TaskGroups = []v4.TaskGroupReport{}
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return out, fmt.Errorf("encode report: %w", err)
	}
	err = c.doJSON(ctx, request{method: http.MethodPost, path: agentNodePath(node) + "/report", body: body}, &out)
	return out, err
}

// AgentConfigMap returns a configmap a task group injects.
func (c *Client) AgentConfigMap(ctx context.Context, ns, name string) (*v4.ConfigMap, error) {
	var cm v4.ConfigMap
	path := "/v1/agent/configmaps/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path}, &cm); err != nil {
		return nil, err
	}
	return &cm, nil
}

// AgentSecret returns a secret for task group taskGroup ("" for any) of node; the server
// answers 403 unless such a task group uses it.
func (c *Client) AgentSecret(ctx context.Context, ns, name, node, taskGroup string) (*v4.Secret, error) {
	var s v4.Secret
	q := url.Values{"node": {node}}
	if taskGroup != "" {
		q.Set("taskgroup", taskGroup)
	}
	path := "/v1/agent/secrets/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path, query: q}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func agentNodePath(node string) string { return "/v1/agent/nodes/" + url.PathEscape(node) }

// AgentCertificate exchanges the join token (WithBearerToken) and a CSR for the node's
// certificate and the cluster CA.
func (c *Client) AgentCertificate(ctx context.Context, node string, csrPEM []byte) (*v4.AgentCertificate, error) {
	return c.agentCert(ctx, "/v1/agent/certificate", v4.AgentCertificateRequest{NodeName: node, CSR: string(csrPEM)})
}

// AgentRenewCertificate asks for a new certificate for the node the client's current
// certificate names.
func (c *Client) AgentRenewCertificate(ctx context.Context, csrPEM []byte) (*v4.AgentCertificate, error) {
	return c.agentCert(ctx, "/v1/agent/certificate/renew", v4.AgentCertificateRequest{CSR: string(csrPEM)})
}

func (c *Client) agentCert(ctx context.Context, path string, req v4.AgentCertificateRequest) (*v4.AgentCertificate, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode certificate request: %w", err)
	}
	var out v4.AgentCertificate
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: path, body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AgentEvent records an event of the agent's node (a Warning an operator must see).
func (c *Client) AgentEvent(ctx context.Context, node string, ev v4.AgentEvent) error {
	return c.doNoAnswerJSON(ctx, http.MethodPost, agentNodePath(node)+"/events", ev, "event")
}

package agent

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A node of a load-balancer group registers its group and HTTP port, which the server's
// admission reads; other nodes register neither.
func TestNodeRegistersItsLoadBalancerGroup(t *testing.T) {
	a := &Agent{cfg: Config{LBGroup: "g1"}}
	n := &v4.Node{Spec: v4.NodeSpec{Attributes: v4.NodeAttributes{Text: map[string]string{"rack": "r1"}}}}
	a.describeLBGroup(n)
	if at := n.Spec.Attributes; at.Text[v4.LBGroupAttribute] != "g1" || at.Scalar[v4.LBHTTPPortAttribute] != 80 || at.Text["rack"] != "r1" {
		t.Errorf("attributes %+v", at)
	}
	a.cfg.LBGroup = ""
	n = &v4.Node{}
	a.describeLBGroup(n)
	if n.Spec.Attributes.Text != nil || n.Spec.Attributes.Scalar != nil {
		t.Errorf("a node without a group: %+v", n.Spec.Attributes)
	}
}

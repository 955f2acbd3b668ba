package controller

import (
	"reflect"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func boolPtr(b bool) *bool { return &b }

// svcTG is a task group of app web, index i, labelled app=web, Running on node n1.
func svcTG(i int, change func(*v4.TaskGroup)) *v4.TaskGroup {
	tg := &v4.TaskGroup{
		Metadata: v4.ObjectMeta{Name: string(rune('0'+i)) + ".web.demo.c.1", Namespace: "demo"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindApplication, Name: "web"}, Index: i, Node: "n1",
			Labels: map[string]string{"app": "web", "tier": "front"},
			Template: v4.PodTemplate{Spec: v4.PodSpec{NetworkMode: "BRIDGE", Containers: []v4.Container{{Name: "main",
				Ports: []v4.Port{{Name: "http", ContainerPort: 8080, HostPort: -1, Protocol: "http"}}}}}}},
		Status: v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1",
			Tasks: []v4.TaskStatus{{Name: "main", Info: v4.ContainerInfo{IPAddress: "172.17.0.2"}}}},
	}
	if change != nil {
		change(tg)
	}
	return tg
}

func TestEndpointAddresses(t *testing.T) {
	svc := &v4.Service{Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: v4.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v4.ServicePort{{Name: "http", Protocol: "http", ServicePort: 80}}}}
	tests := []struct {
		name   string
		change func(*v4.TaskGroup)
		ip     string
		port   int
		ready  bool
	}{
		{"bridge without a host port: the pod's address", nil, "172.17.0.2", 8080, true},
		{"bridge with a host port: the node's", func(tg *v4.TaskGroup) {
			tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31001}}
		}, "10.0.0.1", 31001, true},
		{"host network: the node's and the port", func(tg *v4.TaskGroup) {
			tg.Spec.Template.Spec.NetworkMode = "HOST"
			tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 8080}}
		}, "10.0.0.1", 8080, true},
		{"process: the node's and its host port", func(tg *v4.TaskGroup) {
			tg.Spec.Template.Spec = v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", Ports: []v4.Port{{Name: "http"}}}}}
			tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31500}}
			tg.Status.Tasks[0].Info.IPAddress = ""
		}, "10.0.0.1", 31500, true},
		{"no port of that name: not ready", func(tg *v4.TaskGroup) {
			tg.Spec.Template.Spec.Containers[0].Ports[0].Name = "admin"
		}, "", 0, false},
		{"no pod address yet: not ready", func(tg *v4.TaskGroup) { tg.Status.Tasks[0].Info.IPAddress = "" }, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := endpointsFor(svc, []*v4.TaskGroup{svcTG(0, tt.change)})
			if !tt.ready {
				if len(ep.Endpoints) != 0 || len(ep.NotReady) != 1 || ep.NotReady[0].Reason == "" {
					t.Fatalf("want one not-ready endpoint with a reason, got %+v", ep)
				}
				return
			}
			if len(ep.Endpoints) != 1 || len(ep.Endpoints[0].Ports) != 1 {
				t.Fatalf("want one ready endpoint with one port, got %+v", ep)
			}
			if p := ep.Endpoints[0].Ports[0]; p.IP != tt.ip || p.Port != tt.port || p.Name != "http" || p.Protocol != "http" {
				t.Fatalf("port = %+v, want %s:%d", p, tt.ip, tt.port)
			}
		})
	}
}

func TestEndpointReadiness(t *testing.T) {
	svc := &v4.Service{Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: v4.ServiceSpec{Selector: map[string]string{"app": "web", "tier": "front"}, Ports: []v4.ServicePort{{Name: "http", ServicePort: 80}}}}
	withCheck := func(tg *v4.TaskGroup) {
		tg.Spec.Template.Spec.Containers[0].HealthChecks = []v4.HealthCheck{{Type: v4.CheckHTTP}}
	}
	tests := []struct {
		name   string
		change func(*v4.TaskGroup)
		want   string // "ready", "gone", or the not-ready reason
	}{
		{"running without checks", nil, "ready"},
		{"staging", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusStaging }, v4.StatusStaging},
		{"lost", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusLost }, v4.StatusLost},
		{"stopping", func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped }, "stopping"},
		{"finished", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusFinish }, "gone"},
		{"failed", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusFailed }, "gone"},
		{"another app", func(tg *v4.TaskGroup) { tg.Spec.Labels = map[string]string{"app": "web"} }, "gone"},
		{"check not answered yet", withCheck, "health not checked yet"},
		{"check passing", func(tg *v4.TaskGroup) { withCheck(tg); tg.Status.Healthy = boolPtr(true) }, "ready"},
		{"check failing", func(tg *v4.TaskGroup) {
			withCheck(tg)
			tg.Status.Healthy = boolPtr(false)
			tg.Status.Tasks[0].Healthy, tg.Status.Tasks[0].HealthMessage = boolPtr(false), "GET /: 503"
		}, "health check failing: GET /: 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := endpointsFor(svc, []*v4.TaskGroup{svcTG(0, tt.change)})
			var got string
			switch {
			case len(ep.Endpoints) == 1 && len(ep.NotReady) == 0:
				got = "ready"
			case len(ep.Endpoints) == 0 && len(ep.NotReady) == 0:
				got = "gone"
			case len(ep.Endpoints) == 0 && len(ep.NotReady) == 1:
				got = ep.NotReady[0].Reason
			default:
				t.Fatalf("endpoints %+v", ep)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Endpoints are ordered by owner and index, whatever the order of the task groups, so an
// unchanged set is never written again.
func TestEndpointsAreOrdered(t *testing.T) {
	svc := &v4.Service{Spec: v4.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v4.ServicePort{{Name: "http"}}}}
	a := endpointsFor(svc, []*v4.TaskGroup{svcTG(2, nil), svcTG(0, nil), svcTG(1, nil)})
	b := endpointsFor(svc, []*v4.TaskGroup{svcTG(1, nil), svcTG(2, nil), svcTG(0, nil)})
	if !reflect.DeepEqual(a, b) || a.Endpoints[0].Target.Index != 0 || a.Endpoints[2].Target.Index != 2 {
		t.Fatalf("orders differ or are wrong: %+v / %+v", a.Endpoints, b.Endpoints)
	}
}

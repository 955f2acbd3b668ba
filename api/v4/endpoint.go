package v4

// KindEndpoint names the endpoints of a service: written by berth's service controller,
// one object per service and of the same name, read-only to users.
const KindEndpoint Kind = "endpoint"

// Endpoints are the instances behind a service: BCS's BcsEndpoint, whose "eps" hold
// every instance that is ready (Running, and passing its health checks), with the
// address each service port is reached at. Instances that match the selector but are not
// ready are listed apart, with the reason, so that `berth describe service` can say why
// an instance gets no traffic.
type Endpoints struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	// Endpoints are the ready instances, ordered by owner, index and name.
	Endpoints []Endpoint `json:"eps"`
	// NotReady are the instances that match but get no traffic.
	NotReady []Endpoint `json:"notReady,omitempty"`
	// VIP is the service's virtual IP, from the servers' service range (a service of
	// type ClusterIP; none for type None): every node forwards VIP:servicePort to the
	// ready instances (docs/services.md).
	VIP string `json:"vip,omitempty"`
}

// GetMeta returns the object's metadata.
func (e *Endpoints) GetMeta() *ObjectMeta { return &e.Metadata }

// Endpoint is one instance of a service.
type Endpoint struct {
	NetworkMode string `json:"networkMode"`
	NodeIP      string `json:"nodeIP"`
	// ContainerIP is the pod's own address (the node's for host networking and
	// processes).
	ContainerIP string         `json:"containerIP"`
	Node        string         `json:"node,omitempty"`
	Target      TargetRef      `json:"targetRef"`
	Ports       []EndpointPort `json:"ports,omitempty"`
	// Reason says why an instance is not ready ("Staging", "health check failing: …").
	Reason string `json:"reason,omitempty"`
}

// TargetRef names the task group behind an endpoint: ID is the task group's name (BCS's
// task group ID), Kind and Name its owner's, Index the instance.
type TargetRef struct {
	Kind      Kind   `json:"kind"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Index     int    `json:"index"`
}

// EndpointPort is where one port of a service is reached on an instance: IP and Port
// (BCS's rules: the node's IP and the host port when the port has one on the node,
// host networking and processes included; else the pod's IP and the container port).
type EndpointPort struct {
	// Name is the service port's name (and the task port's it maps to).
	Name          string `json:"name"`
	Protocol      string `json:"protocol"`
	ContainerPort int    `json:"containerPort,omitempty"`
	HostPort      int    `json:"hostPort,omitempty"`
	IP            string `json:"ip"`
	Port          int    `json:"port"`
}

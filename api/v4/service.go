package v4

// Service selects task groups by label and exposes their ports behind one name.
type Service struct {
	TypeMeta
	Metadata ObjectMeta  `json:"metadata"`
	Spec     ServiceSpec `json:"spec"`
}

// GetMeta returns the object's metadata.
func (s *Service) GetMeta() *ObjectMeta { return &s.Metadata }

// ServiceSpec: Type is ClusterIP (default, a virtual address) or None (DNS only).
type ServiceSpec struct {
	Selector  map[string]string `json:"selector"`
	Type      string            `json:"type,omitempty"`
	ClusterIP []string          `json:"clusterIP,omitempty"`
	Ports     []ServicePort     `json:"ports"`
}

// ServicePort maps a service port to the task port named Name (or TargetPort).
type ServicePort struct {
	Name        string `json:"name"`
	DomainName  string `json:"domainName,omitempty"`
	Path        string `json:"path,omitempty"`
	Protocol    string `json:"protocol"`
	ServicePort int    `json:"servicePort"`
	TargetPort  int    `json:"targetPort,omitempty"`
	NodePort    int    `json:"nodePort,omitempty"`
}

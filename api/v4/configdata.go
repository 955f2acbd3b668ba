package v4

// ConfigMap holds configuration items, injected into tasks as env or files.
type ConfigMap struct {
	TypeMeta
	Metadata ObjectMeta               `json:"metadata"`
	Datas    map[string]ConfigMapData `json:"datas"`
}

// GetMeta returns the object's metadata.
func (c *ConfigMap) GetMeta() *ObjectMeta { return &c.Metadata }

// ConfigMapData is one item: Type "file" holds base64 Content; http/https/ftp/ftps give a
// URL in Content fetched with RemoteUser / RemotePasswd.
type ConfigMapData struct {
	Type         string `json:"type"`
	Content      string `json:"content"`
	RemoteUser   string `json:"remoteUser,omitempty"`
	RemotePasswd string `json:"remotePasswd,omitempty"`
}

// Secret holds sensitive items (base64 content); berth encrypts them at rest.
type Secret struct {
	TypeMeta
	Metadata ObjectMeta            `json:"metadata"`
	Type     string                `json:"type,omitempty"`
	Datas    map[string]SecretData `json:"datas"`
}

// GetMeta returns the object's metadata.
func (s *Secret) GetMeta() *ObjectMeta { return &s.Metadata }

// SecretData is one secret item.
type SecretData struct {
	Path    string `json:"path,omitempty"`
	Content string `json:"content"`
}

// Injection types of configmap and secret items.
const (
	InjectEnv  = "env"
	InjectFile = "file"
)

// ConfigMapRef injects items of the configmap Name (same namespace) into a task.
type ConfigMapRef struct {
	Name  string          `json:"name"`
	Items []ConfigMapItem `json:"items"`
}

// ConfigMapItem injects DataKey as env variable KeyOrPath or as the file KeyOrPath.
type ConfigMapItem struct {
	Type         string `json:"type"`
	DataKey      string `json:"dataKey"`
	DataKeyAlias string `json:"dataKeyAlias,omitempty"`
	KeyOrPath    string `json:"keyOrPath"`
	ReadOnly     bool   `json:"readOnly,omitempty"`
	User         string `json:"user,omitempty"`
}

// SecretRef injects items of the secret SecretName (same namespace) into a task.
type SecretRef struct {
	SecretName string       `json:"secretName"`
	Items      []SecretItem `json:"items"`
}

// SecretItem injects DataKey as env variable KeyOrPath or as the file KeyOrPath.
type SecretItem struct {
	Type      string `json:"type"`
	DataKey   string `json:"dataKey"`
	KeyOrPath string `json:"keyOrPath"`
	SubPath   string `json:"subPath,omitempty"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	User      string `json:"user,omitempty"`
}

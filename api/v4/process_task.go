package v4

// ProcessTask is one process of a process pod, run on the host by the process driver
// (docs/process.md).
type ProcessTask struct {
	ProcName         string         `json:"procName"`
	User             string         `json:"user,omitempty"`
	WorkPath         string         `json:"workPath,omitempty"`
	PidFile          string         `json:"pidFile,omitempty"`
	Ports            []Port         `json:"ports,omitempty"`
	URIs             []URI          `json:"uris,omitempty"`
	StartCmd         string         `json:"startCmd"`
	StartGracePeriod int            `json:"startGracePeriod,omitempty"`
	StopCmd          string         `json:"stopCmd,omitempty"`
	ReloadCmd        string         `json:"reloadCmd,omitempty"`
	RestartCmd       string         `json:"restartCmd,omitempty"`
	KillCmd          string         `json:"killCmd,omitempty"`
	LogPath          string         `json:"logPath,omitempty"`
	CfgPath          string         `json:"cfgPath,omitempty"`
	HealthChecks     []HealthCheck  `json:"healthChecks,omitempty"`
	Resources        *Resources     `json:"resources,omitempty"`
	Env              []EnvVar       `json:"env,omitempty"`
	Secrets          []SecretRef    `json:"secrets,omitempty"`
	ConfigMaps       []ConfigMapRef `json:"configmaps,omitempty"`
	Lifecycle        *Lifecycle     `json:"lifecycle,omitempty"`
	// Volumes mount the pod's volumes (podVolume) into the work directory.
	Volumes []Volume `json:"volumes,omitempty"`
}

// URI is a package the process driver downloads (HTTP(S), optional basic auth) and unpacks
// into OutputDir before starting the process.
type URI struct {
	Value      string `json:"value"`
	User       string `json:"user,omitempty"`
	Pwd        string `json:"pwd,omitempty"`
	PullPolicy string `json:"pullPolicy,omitempty"`
	OutputDir  string `json:"outputDir,omitempty"`
}

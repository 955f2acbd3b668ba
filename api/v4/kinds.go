package v4

import (
	"fmt"
	"slices"
	"strings"
)

// Kind names a top-level object type, lowercase as in BCS ("application").
type Kind string

// The kinds berth stores.
const (
	KindApplication Kind = "application"
	KindProcess     Kind = "process"
	KindDeployment  Kind = "deployment"
	KindDaemonset   Kind = "daemonset"
	KindService     Kind = "service"
	KindConfigMap   Kind = "configmap"
	KindSecret      Kind = "secret"
)

// kindInfo describes one kind: its REST plural and how to make an empty value.
// System kinds (nodes, task groups, endpoints) are written by berth itself, not applied by users;
// nodes are also not namespaced.
type kindInfo struct {
	plural string
	short  []string
	make   func() Object
	system bool
}

var kinds = map[Kind]kindInfo{
	KindApplication: {"applications", []string{"app", "apps"}, func() Object { return &Application{} }, false},
	KindProcess:     {"processes", []string{"proc", "procs"}, func() Object { return &Process{} }, false},
	KindDeployment:  {"deployments", []string{"deploy"}, func() Object { return &Deployment{} }, false},
	KindDaemonset:   {"daemonsets", []string{"ds"}, func() Object { return &Daemonset{} }, false},
	KindService:     {"services", []string{"svc"}, func() Object { return &Service{} }, false},
	KindConfigMap:   {"configmaps", []string{"cm"}, func() Object { return &ConfigMap{} }, false},
	KindSecret:      {"secrets", nil, func() Object { return &Secret{} }, false},
	KindNode:        {"nodes", []string{"no"}, func() Object { return &Node{} }, true},
	KindTaskGroup:   {"taskgroups", []string{"tg", "tgs"}, func() Object { return &TaskGroup{} }, true},
	KindDependency:  {"dependencies", []string{"dep", "deps"}, func() Object { return &Dependency{} }, false},
	KindNotify:      {"notifies", nil, func() Object { return &Notify{} }, false},
	KindEndpoint:    {"endpoints", []string{"ep", "eps"}, func() Object { return &Endpoints{} }, true},
	KindVolume:      {"volumes", []string{"vol", "vols"}, func() Object { return &CSIVolume{} }, false},
	KindJob:         {"jobs", []string{"job"}, func() Object { return &Job{} }, false},
	KindCronJob:     {"cronjobs", []string{"cj"}, func() Object { return &CronJob{} }, false},

	// Workflows (docs/workflows.md).
	KindWorkflow:         {"workflows", []string{"wf", "wfs"}, func() Object { return &Workflow{} }, false},
	KindWorkflowTemplate: {"workflowtemplates", []string{"wftmpl", "wftmpls"}, func() Object { return &WorkflowTemplate{} }, false},
	KindCronWorkflow:     {"cronworkflows", []string{"cwf", "cwfs"}, func() Object { return &CronWorkflow{} }, false},

	// Artifact repositories (docs/workflows.md, "Artifact repositories").
	KindArtifactRepository: {"artifactrepositories", []string{"artrepo", "artrepos"}, func() Object { return &ArtifactRepository{} }, false},
}

// Kinds lists the kinds users apply (the specs), in a stable order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for k, info := range kinds {
		if !info.system {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// System reports whether berth writes objects of this kind itself (nodes, task groups),
// so they cannot be applied.
func (k Kind) System() bool { return kinds[k].system }

// Namespaced reports whether objects of this kind live in a namespace (all but nodes).
func (k Kind) Namespaced() bool { return k != KindNode }

// New returns an empty object of the kind, with its TypeMeta filled in.
func New(kind Kind) (Object, error) {
	info, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q (known: %s)", kind, kindList())
	}
	obj := info.make()
	tm := typeMetaOf(obj)
	tm.APIVersion, tm.Kind = APIVersion, kind
	return obj, nil
}

// Plural returns the REST collection name of a kind ("applications").
func (k Kind) Plural() string { return kinds[k].plural }

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { _, ok := kinds[k]; return ok }

// ParseKind accepts a kind, its plural or a short name, case-insensitively
// ("app", "Applications", "application" all give KindApplication).
func ParseKind(s string) (Kind, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for k, info := range kinds {
		if s == string(k) || s == info.plural || slices.Contains(info.short, s) {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown kind %q (known: %s)", s, kindList())
}

func kindList() string {
	names := make([]string, 0, len(kinds))
	for _, k := range Kinds() { // the kinds a document may have
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// typeMetaOf returns the TypeMeta of any of the kinds.
func typeMetaOf(obj Object) *TypeMeta {
	switch o := obj.(type) {
	case *Application:
		return &o.TypeMeta
	case *Process:
		return &o.TypeMeta
	case *Deployment:
		return &o.TypeMeta
	case *Daemonset:
		return &o.TypeMeta
	case *Service:
		return &o.TypeMeta
	case *ConfigMap:
		return &o.TypeMeta
	case *Secret:
		return &o.TypeMeta
	case *Node:
		return &o.TypeMeta
	case *TaskGroup:
		return &o.TypeMeta
	case *Dependency:
		return &o.TypeMeta
	case *Notify:
		return &o.TypeMeta
	case *Endpoints:
		return &o.TypeMeta
	case *CSIVolume:
		return &o.TypeMeta
	case *Workflow:
		return &o.TypeMeta
	case *WorkflowTemplate:
		return &o.TypeMeta
	case *Job:
		return &o.TypeMeta
	case *CronJob:
		return &o.TypeMeta
	case *CronWorkflow:
		return &o.TypeMeta
	case *ArtifactRepository:
		return &o.TypeMeta
	}
	panic(fmt.Sprintf("v4: %T is not a registered kind", obj)) // programming error, never input
}

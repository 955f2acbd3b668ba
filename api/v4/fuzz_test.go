package v4

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func addSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a"},"datas":{"k":{"type":"file","content":"aGk="}}}`))
	f.Add([]byte(`[{"kind":"service","spec":{"ports":[{"servicePort":1e9}]}}]`))
	f.Add([]byte(`{"apiVersion":"v4","kind":"notify","metadata":{"name":"ops"},"spec":{"url":"https://h:8443/cb?a=1",` +
		`"events":["taskgroup.failed","Node.Lost"],"namespaces":["*"],"headers":{"Authorization":"Bearer x"},"timeoutSeconds":3,"maxRetries":0},` +
		`"status":{"delivered":1}}`))
	f.Add([]byte(`{"kind":"notify","spec":{"url":"http://u:p@h/#f","events":["x","x"],"namespaces":["a","*"],"maxRetries":-1}}`))
	// Jobs: counts, modes and failure rules at and past their bounds.
	f.Add([]byte(`{"apiVersion":"v4","kind":"job","metadata":{"name":"j"},"spec":{"completions":20,"parallelism":1e9,"completionMode":"indexed",` +
		`"backoffLimit":-1,"activeDeadlineSeconds":60,"ttlSecondsAfterFinished":0,"suspend":true,"podFailurePolicy":{"rules":[` +
		`{"action":"FailJob","onExitCodes":{"operator":"In","values":[42,256,0]}},{"action":"x","onExitCodes":{"containerName":"c","operator":"NotIn","values":[]}}]},` +
		`"template":{"spec":{"processes":[{"procName":"p","startCmd":"./p"}]}}},"status":{"succeeded":3}}`))
	f.Add([]byte(`{"apiVersion":"v4","kind":"volume","metadata":{"name":"data"},"spec":{"plugin":"hostpath.csi.k8s.io",` +
		`"capacity":{"min":"1G","max":"2Gi"},"accessMode":"multi-node-reader-only","mountOptions":{"fsType":"ext4","flags":["noatime"]},` +
		`"topology":{"required":[{"segments":{"zone":"a"}}],"preferred":[{"segments":{"zone":"a","rack":"r1"}}]},` +
		`"parameters":{"k":"v"},"secrets":{"name":"creds"}},"status":{"phase":"Available","claims":[{"taskgroup":"x","node":"n","mode":"write"}]}}`))
	f.Add([]byte(`{"kind":"VOLUME","spec":{"plugin":"a/b","externalID":"x","capacity":{"min":"9999999P"},"attachmentMode":"block-device",` +
		`"mountOptions":{"flags":["suid","a,b",""]},"topology":{"required":[{"segments":{}}]},"secrets":{"name":"../x"}}}`))
	// Workflows (docs/workflows.md): every template type, loops, depends, references.
	f.Add([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"m","templates":[{"name":"m","steps":[[{"name":"a","template":"s",` +
		`"withItems":[1,"x",{"k":true}],"when":"{{item}} == 1"}],[{"name":"b","template":"m","withSequence":{"start":"{{steps.a.outputs.result}}","end":"3","format":"%03d"}}]]},` +
		`{"name":"s","script":{"command":["sh"],"source":"echo {{inputs.parameters.p}}"},"inputs":{"parameters":[{"name":"p","default":"1"}]}}]}}`))
	f.Add([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"m","shutdown":"Stop","suspend":true,"templates":[{"name":"m","suspend":{}}]}}`))
	f.Add([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"m","shutdown":"stop!","templates":[{"name":"m","suspend":{}}]}}`))
	f.Add([]byte(`{"kind":"WorkflowTemplate","metadata":{"name":"lib"},"spec":{"templates":[{"name":"d","dag":{"tasks":[{"name":"a","templateRef":{"name":"x","template":"y"}},` +
		`{"name":"b","template":"d","depends":"a.Failed || !(a)","arguments":{"artifacts":[{"name":"m","from":"{{tasks.a.outputs.artifacts.m}}"}]}}]},` +
		`"retryStrategy":{"limit":3,"backoff":{"factor":1.5}}}]}}`))
	// Input artifacts from raw, http and git sources (workflow_validate_sources.go).
	f.Add([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"p","templates":[{"name":"p","process":{"procName":"p","startCmd":"true"},` +
		`"inputs":{"artifacts":[{"name":"r","path":"/r","raw":{"data":"x"}},{"name":"h","path":"/h","http":{"url":"https://a:b@h/x","headers":[{"name":"X","value":"\r\n"}]}},` +
		`{"name":"g","path":"/g","git":{"repo":"ssh://-o/x","revision":"-x","depth":-1},"raw":{"data":""}}]}}]}}`))
	// Resource templates (workflow_resource.go): a manifest with placeholders, one of a
	// kind a step may not write, one nesting a workflow, and a bad action.
	f.Add([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"r","arguments":{"parameters":[{"name":"k","value":"v"}]},"templates":[` +
		`{"name":"r","resource":{"action":"apply","manifest":"kind: deployment\nmetadata: {name: web}\nspec: {instance: 1, template: {spec: {containers: [{image: \"w:{{workflow.parameters.k}}\"}]}}}"}},` +
		`{"name":"d","resource":{"action":"delete","manifest":"{\"kind\":\"configmap\",\"metadata\":{\"name\":\"{{workflow.parameters.k}}\",\"namespace\":\"x\"}}"}}]}}`))
	f.Add([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"r","templates":[{"name":"r","resource":{"action":"patch",` +
		`"manifest":"{\"kind\":\"workflow\",\"spec\":{\"templates\":[{\"name\":\"r\",\"resource\":{\"manifest\":\"{{\"}}]}}\n---\n{}"}}]}}`))
	// Cronjobs and cronworkflows (docs/cron.md): schedules, zones, policies and bounds.
	f.Add([]byte(`{"apiVersion":"v4","kind":"cronjob","metadata":{"name":"nightly"},"spec":{"schedule":"30 2 * * MON-FRI","timeZone":"Europe/Berlin",` +
		`"concurrencyPolicy":"forbid","startingDeadlineSeconds":0,"successfulJobsHistoryLimit":101,"failedJobsHistoryLimit":-1,"suspend":true,` +
		`"jobTemplate":{"metadata":{"labels":{"a":"b"}},"spec":{"completions":2,"template":{"spec":{"processes":[{"procName":"p","startCmd":"./p"}]}}}}},` +
		`"status":{"lastScheduleTime":"2026-01-01T00:00:00Z","active":[{"name":"x"}]}}`))
	f.Add([]byte(`{"kind":"cronworkflow","metadata":{"name":"cw"},"spec":{"schedule":"@every 2s","timeZone":"Local","concurrencyPolicy":"Replace",` +
		`"workflowMetadata":{"labels":{"k":"v"}},"workflowSpec":{"entrypoint":"m","templates":[{"name":"m","container":{"image":"busybox"}}]}}}`))
	f.Add([]byte(`{"kind":"cronjob","spec":{"schedule":"0 0 30 2 *","timeZone":"../../etc/passwd","jobTemplate":{"spec":{}}}}`))
	// Artifact repositories (docs/workflows.md): a valid S3 one, and one with every field
	// at or past its rule (a scheme in the endpoint, a bucket of capitals, a key prefix
	// climbing out, secret references without a key).
	f.Add([]byte(`{"apiVersion":"v4","kind":"artifactrepository","metadata":{"name":"s3","namespace":"ml"},"spec":{"default":true,"s3":{` +
		`"endpoint":"s3.eu-west-1.amazonaws.com:443","bucket":"my.bucket-1","region":"eu-west-1","keyPrefix":"berth/arts/","insecure":false,` +
		`"accessKeySecret":{"name":"s3creds","key":"access.key"},"secretKeySecret":{"name":"s3creds","key":"secret_key"}}}}`))
	f.Add([]byte(`{"kind":"ArtifactRepository","metadata":{"name":"x"},"spec":{"s3":{"endpoint":"http://127.0.0.1:99999/p","bucket":"AB",` +
		`"region":"EU west","keyPrefix":"/a/../b//","insecure":"yes","accessKeySecret":{"name":"../x"},"secretKeySecret":{"key":"a/b"}},"s4":{}}}`))
	f.Add([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"m","templates":[{"name":"m","container":{"image":"x"},` +
		`"inputs":{"artifacts":[{"name":"i","path":"/i","repository":{"name":"s3","key":"ml/a/../b"}}]},` +
		`"outputs":{"artifacts":[{"name":"o","path":"/o","repository":{"name":"NOPE"}}]}}]}}`))
	// Priorities (docs/policy.md): a class name, a priority out of range, a budget below 0.
	f.Add([]byte(`{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"priorityClassName":"high",` +
		`"priority":1000,"preemptionPolicy":"Never","disruptionBudget":{"maxUnavailable":1},"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}`))
	f.Add([]byte(`{"kind":"application","spec":{"priorityClassName":"../X","priority":99999999999,"preemptionPolicy":"Always",` +
		`"disruptionBudget":{"maxUnavailable":-1}}}`))
	f.Add([]byte(`{"kind":"cronjob","spec":{"schedule":"@hourly","jobTemplate":{"spec":{"priorityClassName":"","priority":-3000000000}}}}`))
	// The revocable tier (docs/policy.md): the one tier, and others.
	f.Add([]byte(`{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"tier":"revocable",` +
		`"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}`))
	f.Add([]byte(`{"kind":"deployment","spec":{"tier":"Revocable ","priorityClassName":"x"}}`))
	f.Add([]byte(`{"kind":"job","spec":{"tier":["revocable"]}}`))
	// Duplicate keys are refused at any depth by a strict parse, and resolved as BCS did
	// by the default one (docs/spec.md "Streams").
	f.Add([]byte(`{"apiVersion":"v4","kind":"configmap","kind":"secret","metadata":{"name":"a"},"datas":{"k":{"content":"aGk="}}}`))
	f.Add([]byte(`[{"kind":"configmap","metadata":{"name":"a"},"datas":{}},{"kind":"configmap","metadata":{"name":"b","labels":{"x":"1","x":"2"}}}]`))
	// Keys that BCS declares and berth ignores are accepted with a warning.
	f.Add([]byte(`{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"UpdatePolicy":{"x":1},` +
		`"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a"}]}}}}`))
	// What the default parse resolves: objects merged, keys equal but for case, lists
	// of alternatives.
	f.Add([]byte(`{"kind":"service","metadata":{"name":"s","labels":{"BCSBALANCE":"source|x"}},"Metadata":{"namespace":"n"},` +
		`"spec":{"type":"None|ClusterIP","selector":{"a":"b"},"ports":[{"name":"p","servicePort":80,"protocol":"tcp"}],"ports":[{"servicePort":81}]}}`))
	f.Add([]byte(`{"kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x","Image":"y","imagePullPolicy":"never","x":null}],"containers":null}}}}`))
	f.Add([]byte(`{"kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x",` +
		`"volumes":[{"volume":{"mountPath":"/d","podVolume":"d"}}]}],"volumes":[{"name":"d","flexVolume":{"driver":"acme/../nfs",` +
		`"fsType":"ext4","readOnly":true,"secretRef":{"name":"s"},"options":{"kubernetes.io/pod.uid":"x","k":"v","k":"w"}}}]}}}}`))
	// Pod volumes (docs/pods.md, "Volumes"): every source, items, modes, process links.
	f.Add([]byte(`{"kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{` +
		`"volumes":[{"name":"m","emptyDir":{"medium":"Memory","sizeLimit":"64"}},{"name":"c","configMap":{"name":"cfg","items":[{"key":"k","path":"a/b","mode":384}],"defaultMode":420}},` +
		`{"name":"s","secret":{"secretName":"pw","static":true}},{"name":"f","flexVolume":{"driver":"v/d","secretRef":{"name":"pw"},"options":{"a":"b"}}}],` +
		`"containers":[{"image":"x","volumes":[{"volume":{"mountPath":"/m","podVolume":"m","readOnly":true}}]}]}}}}`))
	f.Add([]byte(`{"kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"template":{"spec":{"volumes":[{"name":"d","emptyDir":{}}],` +
		`"processes":[{"procName":"a","startCmd":"./a","volumes":[{"volume":{"mountPath":"../x","podVolume":"d"}}]}]}}}}`))
	// Image pull secrets: a docker config secret (base64 of {"auths":{"r.local:5000":{"auth":"YTpi"}}})
	// and a container naming it.
	f.Add([]byte(`{"kind":"secret","metadata":{"name":"regcred"},"type":"kubernetes.io/dockerconfigjson",` +
		`"datas":{".dockerconfigjson":{"content":"eyJhdXRocyI6eyJyLmxvY2FsOjUwMDAiOnsiYXV0aCI6IllUcGkifX19"}}}`))
	f.Add([]byte(`{"kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[` +
		`{"image":"r.local:5000/app:1","imagePullPolicy":"Never","imagePullSecrets":[{"name":"regcred"},{"name":"x.y"}]}]}}}}`))
	// Per-workload runtimes: a handler name, a path that must be refused, one on processes.
	f.Add([]byte(`{"kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"runtime":"crun","containers":[{"image":"x"}]}}}}`))
	f.Add([]byte(`{"kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"runtime":"../x","Runtime":"/bin/sh","containers":[{"image":"x"}]}}}}`))
	f.Add([]byte(`{"kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"template":{"spec":{"runtime":"runc","processes":[{"procName":"a","startCmd":"./a"}]}}}}`))
	// CSI claims: a volume read by one pod volume and written by another (refused), one of
	// another namespace (refused), one mounted by a container.
	f.Add([]byte(`{"kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"volumes":[` +
		`{"name":"d","csi":{"volume":"data"}},{"name":"e","csi":{"volume":"data","readOnly":true}},{"name":"f","csi":{"volume":"ns/x"}}],` +
		`"containers":[{"image":"x","volumes":[{"volume":{"podVolume":"d","mountPath":"/d"}}]}]}}}}`))
}

// checkParse is what every fuzz target asserts, in both validation modes: no panic; an
// error is either a plain syntax error or FieldErrors with messages; accepted documents
// are valid and survive encode -> decode unchanged; what a strict parse accepts, the
// default parse accepts alike, without a warning.
func checkParse(t *testing.T, data []byte) {
	strict := checkParseMode(t, data, ValidateStrict)
	lenient := checkParseMode(t, data, ValidateWarn)
	if strict == nil {
		return
	}
	if lenient == nil || len(lenient) != len(strict) {
		t.Fatalf("strict accepted %d documents, the default parse %d", len(strict), len(lenient))
	}
	for i := range strict {
		if len(lenient[i].Warnings) > 0 || !reflect.DeepEqual(strict[i].Object, lenient[i].Object) {
			t.Fatalf("document %d: strict and default parses differ (warnings %v)", i, lenient[i].Warnings)
		}
	}
}

func checkParseMode(t *testing.T, data []byte, mode Validation) []Document {
	docs, err := ParseValidated(data, mode)
	if err != nil {
		var fe FieldErrors
		if errors.As(err, &fe) {
			for _, e := range fe {
				if e.Message == "" {
					t.Fatalf("%s: empty message for %q", mode, e.Field)
				}
			}
		}
		return nil
	}
	warnings := 0
	for _, d := range docs {
		for _, w := range d.Warnings {
			if w.Field == "" || w.Message == "" {
				t.Fatalf("a warning without its field or message: %+v", w)
			}
			if len(w.Field) > maxWarningField+len("documents[1000].")+3 {
				t.Fatalf("a warning's field of %d bytes", len(w.Field))
			}
		}
		if mode == ValidateStrict && len(d.Warnings) > 0 {
			t.Fatalf("a strict parse warned: %v", d.Warnings)
		}
		if warnings += len(d.Warnings); warnings > maxWarnings {
			t.Fatalf("%d warnings for one stream, over the bound of %d", warnings, maxWarnings)
		}
		if errs := Validate(d.Object); len(errs) > 0 {
			t.Fatalf("%s: Parse accepted an invalid object: %v", mode, errs)
		}
		enc, err := json.Marshal(d.Object)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		if !reflect.DeepEqual(d.Object, again[0].Object) {
			t.Fatalf("round trip changed the object:\n%s", enc)
		}
		// berth's encoding holds what it resolved: it warns only about what stays (a
		// check's timeout not below its interval, bcs_values.go), which the document
		// warned about too.
		for _, w := range again[0].Warnings {
			if !slices.ContainsFunc(d.Warnings, func(o Warning) bool { return strings.HasSuffix(o.Field, w.Field) && o.Message == w.Message }) {
				t.Fatalf("berth's own encoding warned: %v\n%s", w, enc)
			}
		}
	}
	return docs
}

func FuzzParseJSON(f *testing.F) {
	addSeeds(f)
	f.Fuzz(checkParse)
}

func FuzzParseYAML(f *testing.F) {
	f.Add([]byte("apiVersion: v4\nkind: process\nmetadata: {name: a}\nspec:\n  instance: 1\n  template:\n    spec:\n      processes:\n      - {procName: a, startCmd: ./a}\n"))
	f.Add([]byte("kind: configmap\n---\nkind: secret\nmetadata: {name: s}\ndatas: {k: {content: aGk=}}\n...\n"))
	f.Add([]byte("a: &x [1, 2]\nb: *x\n"))
	f.Add([]byte("kind: dependency\nmetadata: {name: d, namespace: infra}\nspec: {template: {spec: {processes: [{procName: a, startCmd: ./a}]}}}\n---\n" +
		"kind: process\nmetadata: {name: p}\nspec: {instance: 1, template: {spec: {processes: [{procName: a, startCmd: ./a}], dependencies: [{name: d, namespace: infra, policy: NODE}]}}}\n"))
	f.Add([]byte("apiVersion: v4\nkind: deployment\nmetadata: {name: d}\nspec: {instance: 1, selector: {a: b}, strategy: {rollingupdate: {maxUnavilable: 2}}}\n"))
	f.Add([]byte("apiVersion: v4\nkind: deployment\nmetadata: {name: d}\nspec: {instance: 1, selector: {a: b}, strategy: {rollingupdate: {stepDeadline: -1, rollingManually: true}}}\nstatus: {phase: Running, history: [{revision: 1}]}\n"))
	f.Add([]byte("kind: workflow\nmetadata: {name: w}\nspec:\n  entrypoint: m\n  templates:\n  - name: m\n    dag:\n      tasks:\n" +
		"      - {name: a, template: s, withItems: [1, x]}\n      - {name: b, template: s, depends: 'a.AnySucceeded || !a.Failed'}\n" +
		"  - {name: s, suspend: {duration: 5s}}\n"))
	f.Fuzz(checkParse)
}

// FuzzValidate decodes into every kind regardless of the document's own kind, so the
// validator sees objects of every shape, then validates them as they come.
func FuzzValidate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		for i, k := range Kinds() {
			obj, _ := New(k)
			decodeValue("", toNumbers(v), reflect.ValueOf(obj).Elem(), &decoder{lenient: i%2 == 0})
			_ = Validate(obj)
			Default(obj)
			_ = Validate(obj)
		}
	})
}

// toNumbers converts float64s (from json.Unmarshal without UseNumber) to json.Number.
func toNumbers(v any) any {
	switch x := v.(type) {
	case float64:
		b, _ := json.Marshal(x)
		return json.Number(b)
	case []any:
		for i := range x {
			x[i] = toNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = toNumbers(x[k])
		}
	}
	return v
}

// FuzzDecodeNode: no panic, and an accepted node is valid and survives encode -> decode.
func FuzzDecodeNode(f *testing.F) {
	f.Add([]byte(`{"kind":"node","metadata":{"name":"n1","labels":{"a":"b"}},"spec":{"ip":"10.0.0.1","capacity":{"cpu":4,"memoryMB":8192,"diskMB":1000,"extended":{"gpu":2}},
		"portRanges":[{"begin":31000,"end":32000}],"attributes":{"text":{"rack":"r1"},"scalar":{"cpus":8},"set":{"zone":["a","b"]}},"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]},"status":{"phase":"Ready"}}`))
	f.Add([]byte(`{"metadata":{"name":"n1"},"spec":{"cpus":4}}`))
	f.Add([]byte(`{"metadata":{"name":"g1"},"spec":{"gpus":[{"uuid":"GPU-a","index":0,"minor":0,"model":"A100","memoryMiB":40960,"numaNode":0,
		"links":[{"uuid":"GPU-b","level":"nvlink"}]},{"uuid":"GPU-b","index":1,"minor":1,"memoryMiB":40960,"numaNode":-1,"mig":true,"unhealthy":"XID 79"}]}}`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`{"metadata":{"name":"n1","name":"n2"},"spec":{"ip":"10.0.0.1"}}`))
	// CSI plugins (docs/volumes.md, "Plugins"): a valid one and a hostile list.
	f.Add([]byte(`{"metadata":{"name":"n1"},"status":{"csiPlugins":[{"name":"hostpath.csi.k8s.io","version":"1","controller":true,"node":true,` +
		`"nodeID":"n1","maxVolumes":3,"topology":{"zone":"a"},"controllerCapabilities":["create-delete"],"nodeCapabilities":["stage-unstage"],"healthy":true}]}}`))
	f.Add([]byte(`{"metadata":{"name":"n1"},"status":{"csiPlugins":[{"name":"../x","nodeID":"a\nb","maxVolumes":-1,"topology":{"":" "},` +
		`"controllerCapabilities":["x","x","x"]},{"name":"../x"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeNode(data)
		if err != nil {
			return
		}
		if errs := ValidateNode(n); len(errs) > 0 {
			t.Fatalf("DecodeNode accepted an invalid node: %v", errs)
		}
		enc, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeNode(enc)
		if err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if !reflect.DeepEqual(n, again) {
			t.Fatalf("round trip changed the node:\n%s", enc)
		}
	})
}

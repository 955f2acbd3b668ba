package cli

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

type submitFlags struct {
	file     string
	from     string
	name     string
	params   []string
	watch    bool
	interval time.Duration
	nsSet    bool // -n given: it overrides the file's namespace
}

func newSubmitCommand(o *options) *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit -f FILE | --from workflowtemplate/NAME",
		Short: "Create a workflow, and with --watch draw its steps until it ends",
		Long: "Create the workflow of a file (one workflow document, YAML or JSON; - for standard\n" +
			"input), or one from a workflowtemplate's entrypoint, templates and arguments\n" +
			"(--from; its name is the template's with a random suffix unless --name gives one).\n" +
			"-p NAME=VALUE sets a workflow argument, repeatable.\n\n" +
			"--watch draws the tree of the workflow's nodes (steps and DAG tasks under their\n" +
			"parents, phase, duration, the message of a failed node, progress as Pod nodes\n" +
			"finished of those made) until it ends: in place on a terminal, as appended lines\n" +
			"otherwise. It exits 0 when the workflow Succeeded, 1 when it did not.",
		Example: "  berth submit -f examples/workflows/steps.yaml --watch\n" +
			"  berth submit --from workflowtemplate/train -p epochs=3 -n ml --watch",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (f.file == "") == (f.from == "") {
				return fmt.Errorf("give -f FILE or --from workflowtemplate/NAME (one of them)")
			}
			f.nsSet = cmd.Flags().Changed("namespace")
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				return submit(ctx, cmd, o, c, f)
			})
		},
	}
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "file with one workflow (YAML or JSON), or - for standard input")
	cmd.Flags().StringVar(&f.from, "from", "", "make the workflow from workflowtemplate/NAME")
	cmd.Flags().StringVar(&f.name, "name", "", "the workflow's name (default: the file's, or the template's with a random suffix)")
	cmd.Flags().StringArrayVarP(&f.params, "parameter", "p", nil, "workflow argument NAME=VALUE; repeatable")
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "draw the workflow's steps until it ends; exit 1 unless it Succeeded")
	cmd.Flags().DurationVar(&f.interval, "interval", time.Second, "with --watch, how often the workflow is read (at least 100ms)")
	return cmd
}

func submit(ctx context.Context, cmd *cobra.Command, o *options, c *client.Client, f submitFlags) error {
	wf, err := submittedWorkflow(ctx, o, c, f)
	if err != nil {
		return err
	}
	if err := setParameters(wf, f.params); err != nil {
		return err
	}
	obj, err := c.Create(ctx, wf)
	if err != nil {
		return fmt.Errorf("create workflow %s: %w", wf.Metadata.Name, err)
	}
	m := obj.GetMeta()
	fmt.Fprintf(o.out(), "%s created\n", objectName(v4.KindWorkflow, m.Name))
	if !f.watch {
		return nil
	}
	// The watch lasts until the workflow ends: no request timeout but each read's.
	phase, err := o.watchWorkflow(cmdContext(cmd), c, m.Namespace, m.Name, f.interval)
	if err != nil {
		return err
	}
	if phase != v4.WfSucceeded {
		return &ExitError{Code: 1, Message: fmt.Sprintf("workflow %s %s", m.Name, phase)}
	}
	return nil
}

// submittedWorkflow is the workflow of the file, or one made from the template.
func submittedWorkflow(ctx context.Context, o *options, c *client.Client, f submitFlags) (*v4.Workflow, error) {
	var wf *v4.Workflow
	if f.from != "" {
		kind, name, ok := strings.Cut(f.from, "/")
		if k, err := kindArg(kind); !ok || err != nil || k != v4.KindWorkflowTemplate || name == "" {
			return nil, fmt.Errorf("--from %q: give workflowtemplate/NAME", f.from)
		}
		obj, err := c.Get(ctx, v4.KindWorkflowTemplate, o.namespace, name)
		if err != nil {
			return nil, fmt.Errorf("--from %s: %w", f.from, err)
		}
		t := obj.(*v4.WorkflowTemplate)
		wf = &v4.Workflow{Metadata: v4.ObjectMeta{Name: name + "-" + randomSuffix(), Namespace: t.Metadata.Namespace,
			Labels: map[string]string{"workflows.berth.io/template": name}}, Spec: t.Spec}
	} else {
		var err error
		if wf, err = readWorkflowFile(o, f.file); err != nil {
			return nil, err
		}
	}
	wf.TypeMeta = v4.TypeMeta{APIVersion: "v4", Kind: v4.KindWorkflow}
	if f.name != "" {
		wf.Metadata.Name = f.name
	}
	if wf.Metadata.Namespace == "" || f.nsSet {
		wf.Metadata.Namespace = o.namespace
	}
	return wf, nil
}

// maxWorkflowFile bounds the file read: the server takes no more in one request.
const maxWorkflowFile = maxRequestBytes

func readWorkflowFile(o *options, file string) (*v4.Workflow, error) {
	var r io.Reader = o.env.stdin
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("read the workflow: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	data, err := io.ReadAll(io.LimitReader(r, maxWorkflowFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxWorkflowFile {
		return nil, fmt.Errorf("%s: larger than %d bytes, the most one request takes", file, maxWorkflowFile)
	}
	docs, err := v4.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: %d documents; submit takes one workflow", file, len(docs))
	}
	wf, ok := docs[0].Object.(*v4.Workflow)
	if !ok {
		return nil, fmt.Errorf("%s: a %s, not a workflow", file, docs[0].Object.GetKind())
	}
	return wf, nil
}

// setParameters sets the workflow's arguments from NAME=VALUE pairs: a value given
// replaces the file's or the template's.
func setParameters(wf *v4.Workflow, params []string) error {
	for _, p := range params {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return fmt.Errorf("-p %q: give NAME=VALUE", p)
		}
		if wf.Spec.Arguments == nil {
			wf.Spec.Arguments = &v4.WfArguments{}
		}
		args := wf.Spec.Arguments
		found := false
		for i := range args.Parameters {
			if args.Parameters[i].Name == name {
				args.Parameters[i].Value = &value
				found = true
			}
		}
		if !found {
			args.Parameters = append(args.Parameters, v4.WfParameter{Name: name, Value: &value})
		}
	}
	return nil
}

// randomSuffix is five lowercase letters and digits, as kubectl's generateName.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

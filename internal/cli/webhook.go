package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// Admission webhooks (docs/policy.md, "Admission webhooks"; docs/cli.md): `berth get
// admissionwebhooks`, `berth describe admissionwebhook NAME`, and `berth admissionwebhook
// apply|delete` to write the configurations (an administrator's).

// webhookKinds are the names get and describe take for the configurations.
var webhookKinds = map[string]bool{"admissionwebhook": true, "admissionwebhooks": true, "awh": true,
	"mutatingwebhookconfiguration": true, "mutatingwebhookconfigurations": true,
	"validatingwebhookconfiguration": true, "validatingwebhookconfigurations": true}

func webhookKind(s string) bool { return webhookKinds[strings.ToLower(s)] }

// runGetWebhooks is get of the configurations: a table, or the documents.
func runGetWebhooks(cmd *cobra.Command, o *options, f getFlags, args []string) error {
	if f.watch || f.definition || f.allNamespaces {
		return fmt.Errorf("admission webhooks are cluster-wide and have no --watch, --definition or -A")
	}
	return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
		var items []v4.AdmissionWebhook
		if len(args) == 2 {
			one, err := c.AdmissionWebhook(ctx, args[1])
			if err != nil {
				return err
			}
			if format == outJSON || format == outYAML {
				return printStructured(o.out(), format, one)
			}
			items = []v4.AdmissionWebhook{*one}
		} else {
			var err error
			if items, err = c.AdmissionWebhooks(ctx); err != nil {
				return err
			}
		}
		now := o.env.now()
		return printList(o, format, items, webhookHeader, func(w v4.AdmissionWebhook) []string { return webhookRow(w, now) })
	})
}

// webhookHeader and webhookRow are the table of `berth get admissionwebhooks`.
var webhookHeader = []string{"NAME", "MUTATING", "VALIDATING", "FAILURE-POLICY", "SELECTS", "AGE"}

func webhookRow(w v4.AdmissionWebhook, now time.Time) []string {
	var mut, val int
	policies := map[string]bool{}
	for _, h := range w.Hooks() {
		if w.HookType(&h) == v4.WebhookMutating {
			mut++
		} else {
			val++
		}
		policies[orDefault(h.FailurePolicy, v4.WebhookFail)] = true
	}
	var pol []string
	for _, p := range []string{v4.WebhookFail, v4.WebhookIgnore} {
		if policies[p] {
			pol = append(pol, p)
		}
	}
	created := time.Time{}
	if w.Metadata.CreationTimestamp != nil {
		created = *w.Metadata.CreationTimestamp
	}
	return []string{w.Metadata.Name, fmt.Sprint(mut), fmt.Sprint(val), strings.Join(pol, ","), webhookSelects(w), age(created, now)}
}

// webhookSelects sums up what a configuration applies to: BCS's resourcesRef, or the
// first hook's rules.
func webhookSelects(w v4.AdmissionWebhook) string {
	if r := w.ResourcesRef; r != nil {
		return strings.ToUpper(r.Operation) + " " + strings.ToLower(r.Kind)
	}
	hooks := w.Hooks()
	if len(hooks) == 0 || len(hooks[0].Rules) == 0 {
		return "<none>"
	}
	r := hooks[0].Rules[0]
	s := strings.Join(r.Operations, ",") + " " + strings.Join(append(append([]string{}, r.Kinds...), r.Resources...), ",")
	if n := len(hooks[0].Rules); n > 1 {
		s += fmt.Sprintf(" (+%d)", n-1)
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// describeWebhook prints one configuration, hook by hook.
func describeWebhook(ctx context.Context, o *options, c *client.Client, name string) error {
	w, err := c.AdmissionWebhook(ctx, name)
	if err != nil {
		return err
	}
	out := o.out()
	fmt.Fprintf(out, "Name:\t%s\nKind:\t%s\n", w.Metadata.Name, w.Kind)
	if w.Metadata.CreationTimestamp != nil {
		fmt.Fprintf(out, "Created:\t%s\n", w.Metadata.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	if r := w.ResourcesRef; r != nil {
		fmt.Fprintf(out, "Resources:\t%s %s\n", r.Operation, r.Kind)
	}
	fmt.Fprintln(out, "Webhooks:")
	for _, h := range w.Hooks() {
		describeHook(out, w, h)
	}
	return nil
}

func describeHook(out io.Writer, w *v4.AdmissionWebhook, h v4.Webhook) {
	fmt.Fprintf(out, "  %s (%s)\n", h.Name, w.HookType(&h))
	fmt.Fprintf(out, "    URL:\t%s\n", h.ClientConfig.URL)
	ca := "the cluster CA"
	if h.ClientConfig.CABundle != "" {
		ca = "its caBundle"
	}
	fmt.Fprintf(out, "    Verified by:\t%s\n", ca)
	fmt.Fprintf(out, "    Failure policy:\t%s\n    Timeout:\t%s\n", orDefault(h.FailurePolicy, v4.WebhookFail), h.Timeout())
	fmt.Fprintf(out, "    Reinvocation:\t%s\n", orDefault(h.ReinvocationPolicy, v4.ReinvokeNever))
	for _, r := range h.Rules {
		fmt.Fprintf(out, "    Rule:\t%s on %s\n", strings.Join(r.Operations, ","), strings.Join(append(append([]string{}, r.Kinds...), r.Resources...), ","))
	}
	if s := h.NamespaceSelector; s != nil {
		b, _ := json.Marshal(s)
		fmt.Fprintf(out, "    Namespaces:\t%s\n", b)
	}
	if s := h.ObjectSelector; s != nil {
		b, _ := json.Marshal(s)
		fmt.Fprintf(out, "    Objects:\t%s\n", b)
	}
}

// newWebhookCommand is `berth admissionwebhook apply -f FILE` and `delete NAME...`.
func newWebhookCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "admissionwebhook",
		Aliases: []string{"admissionwebhooks", "awh"},
		Short:   "Write the cluster's admission webhook configurations (administrators)",
	}
	cmd.AddCommand(clusterDocCommands(o, "admissionwebhook",
		"Create or replace admission webhook configurations (BCS's or Kubernetes' shape, YAML or JSON)",
		"  berth admissionwebhook apply -f label-hook.yaml\n  berth get admissionwebhooks",
		applyWebhookDoc, func(ctx context.Context, c *client.Client, name string) error {
			return c.DeleteAdmissionWebhook(ctx, name)
		})...)
	return cmd
}

func applyWebhookDoc(ctx context.Context, c *client.Client, d document, body []byte) (v4.ApplyResult, error) {
	var head struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Metadata.Name == "" {
		return v4.ApplyResult{}, fmt.Errorf("%s: a configuration needs metadata.name", d.where())
	}
	w, err := c.PutAdmissionWebhook(ctx, head.Metadata.Name, body)
	if err != nil {
		return v4.ApplyResult{}, fmt.Errorf("%s: %w", d.where(), err)
	}
	return v4.ApplyResult{Kind: v4.KindAdmissionWebhook, Name: w.Metadata.Name, Action: fmt.Sprintf("applied (%d webhooks)", len(w.Hooks())),
		ResourceVersion: w.Metadata.ResourceVersion}, nil
}

// Package cli implements the berth command line: kubectl/nomad-style commands over the
// REST API (internal/client), plus `berth server` and `berth dev` that run the server.
package cli

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// env is what the commands take from the process, injectable so tests need no real
// environment, terminal or home directory.
type env struct {
	getenv func(string) string
	home   func() (string, error)
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	now    func() time.Time
}

func processEnv() *env {
	return &env{
		getenv: os.Getenv,
		home:   os.UserHomeDir,
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		now:    time.Now,
	}
}

// options holds the global flags and the environment shared by every command.
type options struct {
	env       *env
	server    string
	caCert    string
	token     string
	context   string
	namespace string
	output    string
	timeout   time.Duration
}

// NewRootCommand builds the `berth` command tree. Errors are returned, not printed:
// the caller (cmd/berth) prints them once and sets the exit status.
func NewRootCommand() *cobra.Command {
	return newRootCommand(processEnv())
}

func newRootCommand(e *env) *cobra.Command {
	o := &options{env: e}
	root := &cobra.Command{
		Use:   "berth",
		Short: "berth runs containers and processes on a cluster",
		Long: "berth is a cluster orchestrator for containers and plain processes.\n\n" +
			"Start a local cluster with `berth dev`, then `berth apply -f examples/`.",
		SilenceUsage:  true, // a failed request is not a usage error
		SilenceErrors: true, // cmd/berth prints the error once
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&o.server, "server", "", "server address, or several comma separated to fail over in order (default: $BERTH_SERVER, the config file's server:, or "+client.DefaultServer+")")
	pf.StringVar(&o.caCert, "ca-cert", "", "CA certificate file that verifies the servers (default: $BERTH_CA_CERT, the config file's ca-cert:, else the system's roots); a server keeps its cluster's in DATA-DIR/ca.crt")
	pf.StringVar(&o.token, "token", "", "your token, berth-acl-<id>.<secret> (default: $BERTH_TOKEN, the config file's token:, which berth dev writes)")
	pf.StringVar(&o.context, "context", "", "the config file's context to use (default: $BERTH_CONTEXT, then its current-context:)")
	pf.StringVarP(&o.namespace, "namespace", "n", v4.DefaultNamespace, "namespace of the objects")
	pf.StringVarP(&o.output, "output", "o", "table", "output format: table, json, yaml or name")
	pf.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "how long one request may take (watches are not limited)")

	root.AddCommand(
		newApplyCommand(o),
		newGetCommand(o),
		newDescribeCommand(o),
		newDeleteCommand(o),
		newEventsCommand(o),
		newNodesCommand(o),
		newNodeCommand(o),
		newClusterCommand(o),
		newSecretsCommand(o),
		newTokenCommand(o),
		newACLCommand(o),
		newWhoamiCommand(o),
		newAuthCommand(o),
		newConfigCommand(o),
		newLoginCommand(o),
		newPlanCommand(o),
		newScaleCommand(o),
		newReplaceCommand(o),
		newInstanceCommand(o, "stop"),
		newInstanceCommand(o, "start"),
		newRolloutCommand(o),
		newCronCommand(o, v4.KindCronJob),
		newCronCommand(o, v4.KindCronWorkflow),
		newMoveCommand(o),
		newDrainCommand(o),
		newMaintenanceCommand(o),
		newLogsCommand(o),
		newExecCommand(o),
		newActionCommand(o, "reload", "Run the reloadCmd of a task group's processes", "reloaded"),
		newActionCommand(o, "restart", "Run the restartCmd of a task group's processes", "restarted"),
		newSignalCommand(o),
		newAgentCommand(o),
		newSimCommand(o),
		newServerCommand(o),
		newDevCommand(o),
		newVersionCommand(o),
		newSubmitCommand(o),
		newWorkflowCommand(o),
		newJobCommand(o),
		newWebhookCommand(o),
		newCertificateCommand(o),
		newQuotaCommand(o),
		newPriorityClassCommand(o),
	)
	return root
}

// settingsEnv is the environment the config file is read with: --context stands for
// $BERTH_CONTEXT.
func (o *options) settingsEnv() *env {
	if o.context == "" {
		return o.env
	}
	e := *o.env
	e.getenv = func(k string) string {
		if k == "BERTH_CONTEXT" {
			return o.context
		}
		return o.env.getenv(k)
	}
	return &e
}

// client builds an API client for the resolved server address, trusting the resolved CA.
func (o *options) client() (*client.Client, error) {
	addr, err := resolveServer(o.server, o.settingsEnv())
	if err != nil {
		return nil, err
	}
	hc, err := o.httpClient()
	if err != nil {
		return nil, err
	}
	opts := []client.Option{client.WithHTTPClient(hc), client.WithUserAgent("berth/" + Version),
		client.WithWarningHandler(func(text string) { fmt.Fprintf(o.env.stderr, "warning: %s\n", text) })}
	token, err := resolveToken(o.token, o.settingsEnv())
	if err != nil {
		return nil, err
	}
	if token != "" {
		opts = append(opts, client.WithBearerToken(token))
	}
	return client.New(addr, opts...)
}

// httpClient is the HTTP client of API calls: TLS verified with the resolved CA
// certificate, or the system's roots without one.
func (o *options) httpClient() (*http.Client, error) {
	ca, err := resolveCACert(o.caCert, o.settingsEnv())
	if err != nil {
		return nil, err
	}
	var roots *x509.CertPool
	if ca != "" {
		if roots, err = client.LoadCAFile(ca); err != nil {
			return nil, fmt.Errorf("%w (from --ca-cert, $BERTH_CA_CERT or the config file)", err)
		}
	}
	return client.HTTPClient(roots, nil), nil
}

// cmdContext is the command's context, or Background outside Execute: what a stream
// that lasts until the user stops it runs under.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// requestContext bounds one request with --request-timeout.
func (o *options) requestContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmdContext(cmd)
	if o.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, o.timeout)
}

// format parses -o.
func (o *options) format() (outputFormat, error) { return parseOutput(o.output) }

// out is where results go.
func (o *options) out() io.Writer { return o.env.stdout }

// kindArg parses a kind given on the command line.
func kindArg(s string) (v4.Kind, error) {
	k, err := v4.ParseKind(s)
	if err != nil {
		return "", fmt.Errorf("%w; see `berth get --help`", err)
	}
	return k, nil
}

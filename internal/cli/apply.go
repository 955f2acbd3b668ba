package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// fileFlags are the -f and -R flags shared by apply, plan and delete.
type fileFlags struct {
	files     []string
	recursive bool
	// oneRequest is set by apply and plan, which send every document in one request body: the
	// files together must then fit the server's limit, not only each one.
	oneRequest bool
}

func (f *fileFlags) register(cmd *cobra.Command, verb string) {
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "file, directory or - (standard input) with the objects to "+verb+"; repeatable")
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false, "descend into subdirectories of directories given with -f")
}

// documents reads, splits and checks every input of the -f flags (files.go, manifest.go).
func (f *fileFlags) documents(stdin io.Reader) ([]document, error) {
	files, err := collectFiles(f.files, f.recursive)
	if err != nil {
		return nil, err
	}
	return readDocuments(files, stdin, maxRequestBytes, f.oneRequest)
}

// validateFlag is the --validate flag of apply and plan: how strictly the server reads
// the documents (docs/cli.md).
type validateFlag string

func (v *validateFlag) register(cmd *cobra.Command) {
	*v = "warn"
	cmd.Flags().StringVar((*string)(v), "validate", "warn", `how strictly the server reads the documents: "warn" accepts what BCS accepted, `+
		`with a warning for each unknown key dropped, duplicate key resolved or value read berth's way; "strict" refuses them`)
}

func (v validateFlag) mode() (v4.Validation, error) {
	m, err := v4.ParseValidation(string(v))
	if err != nil {
		return m, fmt.Errorf("--%w", err)
	}
	return m, nil
}

func newApplyCommand(o *options) *cobra.Command {
	f := fileFlags{oneRequest: true}
	var validate validateFlag
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update the objects of files, all at once",
		Long: "Create or update every object defined in the files, in one request: if any\n" +
			"document is invalid, every problem is listed and nothing is changed.\n\n" +
			"Files are JSON (BCS v4) or YAML, one or more documents each: *.json files are read\n" +
			"as strict JSON, *.yaml and *.yml as YAML, anything else and - as JSON when it starts\n" +
			"with { or [. A syntax error names the file, the document and the line. A directory\n" +
			"contributes its *.json, *.yaml and *.yml files in name order (subdirectories with\n" +
			"-R). The files must fit in one request to the server (2 MiB).\n" +
			"Namespaces come from the documents' metadata.namespace (default defaultGroup).\n\n" +
			"Priority classes and admission webhook configurations (cluster-wide, an\n" +
			"administrator's) are put first, each on its own route, then the rest in one request;\n" +
			"when the server refuses any of them, those already put are put back as they were.\n" +
			"By default the server accepts what BCS accepted and warns about each key it drops,\n" +
			"duplicate it resolves or value it reads its own way; --validate=strict refuses them.",
		Example: "  berth apply -f examples/\n" +
			"  berth apply --validate=strict -f app.json\n" +
			"  berth apply -f app.json -f cfg.yaml\n" +
			"  cat app.yaml | berth apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseNamespaceFlag(cmd, "apply"); err != nil {
				return err
			}
			mode, err := validate.mode()
			if err != nil {
				return err
			}
			format, err := o.format()
			if err != nil {
				return err
			}
			docs, err := f.documents(o.env.stdin)
			if err != nil {
				return err
			}
			docs, cluster := splitClusterDocs(docs) // apply_cluster.go
			// documents counted the documents' bytes; the stream adds the lines that join them.
			body := buildStream(docs)
			if int64(len(body)) > maxRequestBytes {
				return streamTooLarge(docs[len(docs)-1].file, maxRequestBytes)
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				put, undos, err := putClusterDocs(ctx, c, cluster)
				if err != nil {
					return undoPuts(ctx, c, undos, err) // apply_undo.go
				}
				if len(docs) == 0 {
					return printApplyResults(o.out(), format, put)
				}
				results, err := c.ApplyValidated(ctx, body, mode)
				if err != nil {
					return undoPuts(ctx, c, undos, applyError(err, docs))
				}
				return printApplyResults(o.out(), format, append(put, results...))
			})
		},
	}
	f.register(cmd, "apply")
	validate.register(cmd)
	return cmd
}

// printApplyResults prints one line per object like kubectl ("process/gamesvc created").
func printApplyResults(w io.Writer, format outputFormat, results []v4.ApplyResult) error {
	switch format {
	case outJSON, outYAML:
		return printStructured(w, format, struct {
			Results []v4.ApplyResult `json:"results"`
		}{results})
	case outName:
		for _, r := range results {
			fmt.Fprintln(w, objectName(r.Kind, r.Name))
		}
		return nil
	}
	for _, r := range results {
		fmt.Fprintf(w, "%s %s\n", objectRef(r.Kind, r.Namespace, r.Name), r.Action)
	}
	return nil
}

// docPath matches the "documents[i]." prefix the server puts on field paths when a
// stream has several documents.
var docPath = regexp.MustCompile(`^documents\[(\d+)\]\.?`)

// applyError rewrites a 422 so every field error names the file (and the document within
// it when the file has several) instead of the position in the combined stream.
func applyError(err error, docs []document) error {
	return documentsError(err, docs, "nothing was applied: ")
}

// documentsError lists the field errors of an answer about the documents sent in one
// stream (apply, plan), each with its file; refused, when set, starts the message of a 422.
func documentsError(err error, docs []document, refused string) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || len(ae.Details) == 0 {
		return err
	}
	lines := make([]string, 0, len(ae.Details))
	for _, d := range ae.Details {
		lines = append(lines, locateFieldError(d, docs))
	}
	msg := ae.Message
	if ae.Status == 422 {
		msg = refused + msg
	}
	return fmt.Errorf("%s\n  - %s", msg, strings.Join(lines, "\n  - "))
}

// refuseNamespaceFlag refuses -n in the commands that take every namespace from the
// documents (apply, plan, delete -f), rather than ignore it.
func refuseNamespaceFlag(cmd *cobra.Command, command string) error {
	if cmd.Flags().Changed("namespace") {
		return errors.New(command + " takes namespaces from the documents' metadata.namespace; -n is not used")
	}
	return nil
}

// locateFieldError renders one field error with its file.
func locateFieldError(fe v4.FieldError, docs []document) string {
	field := fe.Field
	var doc *document
	if m := docPath.FindStringSubmatch(field); m != nil {
		if i, err := strconv.Atoi(m[1]); err == nil && i < len(docs) {
			doc = &docs[i]
			field = field[len(m[0]):]
		}
	} else if len(docs) == 1 {
		doc = &docs[0]
	}
	if doc == nil {
		return fe.Error()
	}
	where := doc.where()
	if field == "" {
		return where + ": " + fe.Message
	}
	return where + ": " + field + ": " + fe.Message
}

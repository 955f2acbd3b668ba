package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// outputFormat is the value of -o.
type outputFormat string

const (
	outTable outputFormat = "table"
	outJSON  outputFormat = "json"
	outYAML  outputFormat = "yaml"
	outName  outputFormat = "name"
)

func parseOutput(s string) (outputFormat, error) {
	switch f := outputFormat(strings.ToLower(strings.TrimSpace(s))); f {
	case outTable, outJSON, outYAML, outName:
		return f, nil
	case "":
		return outTable, nil
	}
	return "", fmt.Errorf("unknown output format %q (use table, json, yaml or name)", s)
}

// listDoc is how -o json|yaml prints several objects, in the shape of the API's List.
type listDoc struct {
	Kind  string      `json:"kind"`
	Items []v4.Object `json:"items"`
}

// printStructured prints v as indented JSON or as YAML.
func printStructured(w io.Writer, f outputFormat, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	if f == outYAML {
		if data, err = jsonToYAML(data); err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// jsonToYAML re-encodes JSON as block-style YAML, keeping the key order of the JSON (that
// of the Go types) rather than sorting keys as a map round trip would.
func jsonToYAML(data []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("convert to yaml: %w", err)
	}
	blockStyle(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, fmt.Errorf("convert to yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("convert to yaml: %w", err)
	}
	return buf.Bytes(), nil
}

// blockStyle drops the flow and quoting styles the JSON input implies. The encoder still
// quotes strings that would otherwise read as another type ("0.5", "true"), because the
// nodes keep their !!str tag.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// objectName is the `kind/name` of -o name and of command results.
func objectName(kind v4.Kind, name string) string { return string(kind) + "/" + name }

// objectRef names an object in messages like kubectl: `process/gamesvc` in the default
// namespace, `process ns-a/gamesvc` elsewhere.
func objectRef(kind v4.Kind, ns, name string) string {
	if ns == "" || ns == v4.DefaultNamespace {
		return objectName(kind, name)
	}
	return string(kind) + " " + ns + "/" + name
}

// printStarted reports an operation the server accepted on kind/name (scale, move,
// drain): its own message, or started when it has none, and the watch URL following it.
func printStarted(w io.Writer, kind v4.Kind, name string, res *client.Operation, started string) {
	msg := started
	if res.Operation != nil && res.Operation.Message != "" {
		msg = res.Operation.Message
	}
	fmt.Fprintf(w, "%s: %s (watch: %s)\n", objectName(kind, name), msg, res.Watch)
}

// printList prints a list answer whole with -o json or yaml, else as a table of a row
// for each item.
func printList[T any](o *options, format outputFormat, items []T, header []string, row func(T) []string) error {
	if format == outJSON || format == outYAML {
		return printStructured(o.out(), format, items)
	}
	rows := make([][]string, 0, len(items))
	for _, item := range items {
		rows = append(rows, row(item))
	}
	return writeTable(o.out(), header, rows)
}

// printSecretOnce prints a created token, whose secret the servers show this once: the
// whole answer with -o json or yaml, the secret alone with -o name (for scripts), else
// the secret and then about, a sentence on what it is.
func printSecretOnce(o *options, format outputFormat, answer any, secret, about string) error {
	switch format {
	case outJSON, outYAML:
		return printStructured(o.out(), format, answer)
	case outName:
		fmt.Fprintln(o.out(), secret)
		return nil
	}
	fmt.Fprintf(o.out(), "%s\n\n%s It is shown once: keep it secret.\n", secret, about)
	return nil
}

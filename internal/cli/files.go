package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berthhq/berth/internal/bytesize"
	"github.com/berthhq/berth/internal/server"
)

// stdinName names standard input in messages.
const stdinName = "<stdin>"

// manifestExts are the files a directory contributes to apply and delete -f.
var manifestExts = map[string]bool{".json": true, ".yaml": true, ".yml": true}

// collectFiles expands -f arguments: a file as is, a directory into its *.json, *.yaml and
// *.yml files sorted by name (descending into subdirectories only with recursive), and
// "-" for standard input. Hidden entries (".git", editor files) are skipped inside
// directories. A path that does not exist is an error.
func collectFiles(paths []string, recursive bool) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("no input: give -f FILE, DIR or - (standard input)")
	}
	var out []string
	stdin := false
	for _, p := range paths {
		if p == "-" {
			if stdin {
				return nil, errors.New("-f - (standard input) given twice")
			}
			stdin = true
			out = append(out, p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("path %s does not exist", p)
			}
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		files, err := dirFiles(p, recursive)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// dirFiles lists the manifests of dir in lexical order (WalkDir's order).
func dirFiles(dir string, recursive bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if manifestExts[strings.ToLower(filepath.Ext(path))] {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", dir, err)
	}
	return out, nil
}

// maxRequestBytes is the server's limit on a request body (server.DefaultMaxBodyBytes,
// 413 past it: docs/api.md). apply sends every document in one request, so a file larger
// than that could never be applied: it is refused from its size, before it is read.
const maxRequestBytes = server.DefaultMaxBodyBytes

// source is one input file and its content.
type source struct {
	name   string
	data   []byte
	format inputFormat
}

// readSource reads one file collectFiles names ("-" from stdin), refusing one over limit
// bytes from its size before reading it, or once limit bytes are read where the size is
// not known in advance (standard input, a pipe, a file that grows).
func readSource(path string, stdin io.Reader, limit int64) (source, error) {
	if path == "-" {
		data, err := io.ReadAll(io.LimitReader(stdin, limit+1))
		if err != nil {
			return source{}, fmt.Errorf("read %s: %w", stdinName, err)
		}
		if int64(len(data)) > limit {
			return source{}, tooLarge(stdinName, 0, limit)
		}
		return source{name: stdinName, data: data, format: formatSniff}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return source{}, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() > limit {
		return source{}, tooLarge(path, info.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return source{}, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return source{}, tooLarge(path, 0, limit)
	}
	return source{name: path, data: data, format: formatOf(path)}, nil
}

// tooLarge is the error for a file over the request limit; size is 0 when unknown.
func tooLarge(name string, size, limit int64) error {
	have, allowed := bytesize.Format(size), bytesize.Format(limit)
	if have == allowed { // just over: rounded, both would read the same
		have, allowed = fmt.Sprintf("%d bytes", size), fmt.Sprintf("%d bytes", limit)
	}
	what := name + " is over"
	if size > 0 {
		what = fmt.Sprintf("%s is %s, over", name, have)
	}
	return fmt.Errorf("%s the server's limit of %s per request: split it into smaller files", what, allowed)
}

// readDocuments reads and splits every file, in order. With oneRequest (apply: every
// document goes in one request body) it stops as soon as the documents read so far are
// over limit, rather than reading a whole directory the server would refuse. Input with
// no document at all is an error.
func readDocuments(files []string, stdin io.Reader, limit int64, oneRequest bool) ([]document, error) {
	var docs []document
	var total int64
	for _, f := range files {
		src, err := readSource(f, stdin, limit)
		if err != nil {
			return nil, err
		}
		fileDocs, err := splitSource(src)
		if err != nil {
			return nil, err
		}
		for _, d := range fileDocs {
			total += int64(len(d.raw))
		}
		if oneRequest && total > limit {
			return nil, streamTooLarge(src.name, limit)
		}
		docs = append(docs, fileDocs...)
	}
	if len(docs) > 0 {
		return docs, nil
	}
	if len(files) == 0 {
		return nil, errors.New("no objects found: no .json, .yaml or .yml files")
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f
		if f == "-" {
			names[i] = stdinName
		}
	}
	return nil, fmt.Errorf("no objects found in %s", strings.Join(names, ", "))
}

// streamTooLarge is the error for files that fit the request limit one by one but not
// together; last is the file that went over.
func streamTooLarge(last string, limit int64) error {
	return fmt.Errorf("the documents of the files up to %s add up to more than the server's limit of %s per request: apply fewer files at once",
		last, bytesize.Format(limit))
}

// buildStream joins documents into one apply body. When every document is JSON the body
// is a JSON stream; otherwise it is a YAML stream with every document after a `---`
// line (JSON is valid YAML), so the server sees exactly len(docs) documents.
func buildStream(docs []document) []byte {
	allJSON := true
	for _, d := range docs {
		allJSON = allJSON && d.json
	}
	var b bytes.Buffer
	for _, d := range docs {
		if !allJSON {
			b.WriteString("---\n")
		}
		b.Write(d.raw)
		if !bytes.HasSuffix(d.raw, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

package server

import (
	"github.com/berthhq/berth/internal/httpapi"

	"errors"
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// packageRoutes serves PackagesDir at /packages/: a read-only package repository that
// process uris can download from (BCS kept packages in its own repository). Directory
// listings are not served.
func (s *Server) packageRoutes(mux *httpapi.Mux) {
	if s.packagesDir == "" {
		return
	}
	files := http.StripPrefix("/packages/", http.FileServer(packageFS{s.packagesDir}))
	mux.HandleHTTP("GET /packages/", httpapi.Open, files)
}

// packageFS opens files of dir through an os.Root, so that no name and no symlink
// inside dir can reach a file outside it: a link to /etc/passwd or to ../outside is
// "not found", while a relative link that stays inside is served (docs/operations.md).
// Directories are hidden, so only known file names can be fetched. The root is opened
// per request, so a packages dir created or replaced after the server started is served
// as it is now.
type packageFS struct{ dir string }

func (p packageFS) Open(name string) (http.File, error) {
	root, err := os.OpenRoot(p.dir)
	if err != nil {
		return nil, os.ErrNotExist
	}
	defer root.Close() // the file opened through it stays open
	// http.FileServer gives a cleaned name starting with "/".
	rel := strings.TrimPrefix(name, "/")
	if rel == "" {
		return nil, os.ErrNotExist
	}
	f, err := root.Open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, os.ErrPermission
		}
		// Escaping the root (a link out, an absolute link) is no different from a
		// missing file to the client; http.FileServer would answer 500 for it.
		return nil, os.ErrNotExist
	}
	if st, err := f.Stat(); err != nil || st.IsDir() {
		f.Close()
		return nil, os.ErrNotExist
	}
	return f, nil
}

package server

import (
	"net/http"
	"os"
)

// packageRoutes serves PackagesDir at /packages/: a read-only package repository that
// process uris can download from (BCS kept packages in its own repository). Directory
// listings are not served.
func (s *Server) packageRoutes(mux *routeMux) {
	if s.packagesDir == "" {
		return
	}
	files := http.StripPrefix("/packages/", http.FileServer(noListing{http.Dir(s.packagesDir)}))
	mux.Handle("GET /packages/", files)
}

// noListing hides directories, so only known file names can be fetched.
type noListing struct{ fs http.FileSystem }

func (n noListing) Open(name string) (http.File, error) {
	f, err := n.fs.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, os.ErrNotExist
	}
	return f, nil
}

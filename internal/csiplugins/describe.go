package csiplugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	"google.golang.org/grpc/codes"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi"
)

// socketRef is a plugin's socket as found: its resolved path and the file it was.
type socketRef struct {
	path string
	id   socketID
}

// socketID tells one socket file from the next at the same path: a plugin that
// restarts listens on a new one, and is then described afresh.
type socketID struct {
	dev, ino uint64
	mtime    int64
}

// find lists the plugin sockets of the directory, by plugin name, at most
// v4.MaxCSIPlugins (by name order). A name that is not a plugin name, or whose socket
// resolves outside the directory (a symlink a plugin workload planted), is ignored and
// logged; a directory without a socket yet (its plugin is starting) is skipped quietly.
func (r *Registry) find() map[string]socketRef {
	entries, err := os.ReadDir(r.opts.Dir)
	if err != nil {
		r.ignore("", fmt.Sprintf("cannot read the plugin directory: %v", err))
		return nil
	}
	root, err := filepath.EvalSymlinks(r.opts.Dir)
	if err != nil {
		r.ignore("", fmt.Sprintf("cannot resolve the plugin directory: %v", err))
		return nil
	}
	out := map[string]socketRef{}
	for _, e := range entries {
		name := e.Name()
		if !v4.ValidCSIPluginName(name) {
			r.ignore(name, "not a CSI plugin name (a domain name of at most 63 letters, digits, '.' and '-')")
			continue
		}
		s, why := socketOf(root, name)
		switch {
		case why == errNoSocket:
			delete(r.ignored, name)
			continue
		case why != "":
			r.ignore(name, why)
			continue
		case len(out) == v4.MaxCSIPlugins:
			r.ignore(name, fmt.Sprintf("a node has at most %d CSI plugins", v4.MaxCSIPlugins))
			continue
		}
		delete(r.ignored, name)
		out[name] = s
	}
	return out
}

const errNoSocket = "no socket"

// dropStale removes from found the sockets nothing listens on: a plugin killed without
// removing its socket is gone, not an unhealthy plugin reported for ever. Only new and
// unhealthy plugins are checked (a connection that sends nothing makes a plugin log).
func (r *Registry) dropStale(found map[string]socketRef) {
	for name, s := range found {
		r.mu.Lock()
		p, known := r.plugins[name]
		healthy := known && p.info.Healthy && p.ident == s.id
		r.mu.Unlock()
		if healthy || !refused(s.path) {
			continue
		}
		delete(found, name)
		r.ignore(name, "nothing listens on its socket (a plugin that stopped without removing it)")
	}
}

// refused reports whether connecting to the socket is refused: nothing listens there.
func refused(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	c.Close()
	return false
}

// socketOf finds <root>/<name>/csi.sock: resolved, within root, and a socket.
func socketOf(root, name string) (socketRef, string) {
	p := filepath.Join(root, name, SocketName)
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return socketRef{}, errNoSocket
	}
	if err != nil {
		return socketRef{}, fmt.Sprintf("cannot resolve %s: %v", p, err)
	}
	if !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return socketRef{}, fmt.Sprintf("%s resolves to %s, outside the plugin directory", p, real)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return socketRef{}, fmt.Sprintf("cannot read %s: %v", p, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return socketRef{}, fmt.Sprintf("%s is not a unix socket", p)
	}
	ref := socketRef{path: real}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ref.id = socketID{dev: uint64(st.Dev), ino: st.Ino, mtime: fi.ModTime().UnixNano()}
	}
	return ref, ""
}

// describe asks the plugin what it is. A healthy plugin is only probed again; one that
// was not (or is new) is asked everything: identity, capabilities and node info.
func describe(ctx context.Context, c *csi.Client, prev v4.CSIPlugin) v4.CSIPlugin {
	if prev.Healthy {
		info := prev
		if err := probe(ctx, c); err != nil {
			info.Healthy, info.Message = false, message(err.Error())
		}
		return info
	}
	info := v4.CSIPlugin{Name: prev.Name}
	if err := ask(ctx, c, &info); err != nil {
		info.Healthy, info.Message = false, message(err.Error())
	} else {
		info.Healthy = true
	}
	if errs := v4.ValidateCSIPlugins([]v4.CSIPlugin{info}); len(errs) > 0 {
		// What the plugin said cannot be stored (a topology value with a space, a huge
		// node ID): the node reports the plugin, unhealthy, without it.
		info = v4.CSIPlugin{Name: prev.Name, Controller: info.Controller, Node: info.Node,
			Message: message("the plugin's answers are invalid: " + errs.Error())}
	}
	return info
}

// probe asks the plugin whether it is ready.
func probe(ctx context.Context, c *csi.Client) error {
	ready, err := c.Probe(ctx)
	if err != nil {
		return err
	}
	if !ready {
		return errors.New("the plugin says it is not ready")
	}
	return nil
}

// ask fills info with what the plugin says, or returns why it is not usable.
func ask(ctx context.Context, c *csi.Client, info *v4.CSIPlugin) error {
	if err := probe(ctx, c); err != nil {
		return err
	}
	pi, err := c.PluginInfo(ctx)
	if err != nil {
		return err
	}
	info.Version = pi.VendorVersion
	if pi.Name != info.Name {
		return fmt.Errorf("the plugin says its name is %q, not %q (the name of its directory)", truncate(pi.Name, 80), info.Name)
	}
	pc, err := c.PluginCapabilities(ctx)
	if err != nil {
		return err
	}
	if pc.Controller {
		cc, err := c.ControllerCapabilities(ctx)
		if err != nil {
			return err
		}
		info.Controller = true
		if cc.CreateDelete {
			info.ControllerCapabilities = append(info.ControllerCapabilities, v4.CSICreateDelete)
		}
		if cc.PublishUnpublish {
			info.ControllerCapabilities = append(info.ControllerCapabilities, v4.CSIPublishUnpublish)
		}
	}
	if err := askNode(ctx, c, info); err != nil {
		return err
	}
	if !info.Controller && !info.Node {
		return errors.New("the plugin offers neither the controller nor the node service")
	}
	return nil
}

// askNode fills the node service's part of info. A plugin without the node service (a
// controller plugin alone) answers NodeGetInfo with Unimplemented.
func askNode(ctx context.Context, c *csi.Client, info *v4.CSIPlugin) error {
	ni, err := c.NodeInfo(ctx)
	if csi.Code(err) == codes.Unimplemented {
		return nil
	}
	if err != nil {
		return err
	}
	nc, err := c.NodeCapabilities(ctx)
	if err != nil {
		return err
	}
	info.Node, info.NodeID, info.MaxVolumes = true, ni.ID, ni.MaxVolumes
	if len(ni.Topology) > 0 {
		info.Topology = map[string]string(ni.Topology)
	}
	if nc.StageUnstage {
		info.NodeCapabilities = []string{v4.CSIStageUnstage}
	}
	return nil
}

// message makes text fit CSIPlugin.Message: no control characters (a plugin's error
// must not forge lines in logs and events), valid UTF-8, bounded.
func message(text string) string {
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(text, "?"))
	return truncate(text, v4.MaxCSIPluginMessage)
}

// truncate cuts s to at most n bytes, at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

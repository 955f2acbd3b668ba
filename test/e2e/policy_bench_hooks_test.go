package e2e

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/pki"
)

// benchHooksDirEnv makes the test binary a hook server (TestMain): it serves the
// benchmark's hooks with the certificate and key in that folder and writes its URL
// there, until it is killed.
const benchHooksDirEnv = "BERTH_E2E_BENCH_HOOKS_DIR"

// startBenchHooks serves the hooks on 127.0.0.2 over TLS with a certificate from a CA
// the test makes (given to the hooks as their caBundle): /label/NAME adds the label
// bench-NAME=yes, /allow allows. It returns the URL and the bundle.
//
// With BERTH_BENCH_POLICY_HOOK_CPUS (a taskset list, "1") they are served by a process
// of their own on those CPUs, as a production hook runs on machines of its own: run
// the benchmark itself on the others (taskset -c 0 go test ...), so that the cluster
// has the same CPUs with hooks and without, and the hooks' server takes none of them.
// Without it they are served in this process, on the CPUs the cluster uses.
func startBenchHooks(b *testing.B) (string, string) {
	ca, err := pki.NewCA("policy bench hooks CA", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	kp, err := ca.Issue(pki.Request{CommonName: "hooks.test", IPs: []net.IP{net.ParseIP("127.0.0.2")}, Server: true}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	bundle := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
	if cpus := os.Getenv("BERTH_BENCH_POLICY_HOOK_CPUS"); cpus != "" {
		return startHookProcess(b, cpus, kp.CertPEM, kp.KeyPEM), bundle
	}
	pair, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		b.Fatal(err)
	}
	return serveHooks(b, pair, serveBenchHook), bundle
}

// startHookProcess runs this test binary as the hook server on cpus, and returns its URL.
func startHookProcess(b *testing.B, cpus string, certPEM, keyPEM []byte) string {
	dir := b.TempDir()
	for name, data := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command("taskset", "-c", cpus, os.Args[0])
	cmd.Env = append(os.Environ(), benchHooksDirEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the benchmark
	if err := cmd.Start(); err != nil {
		b.Fatalf("start the hook server on CPUs %s: %v", cpus, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() { cmd.Process.Kill(); <-exited })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if url, err := os.ReadFile(filepath.Join(dir, "url")); err == nil {
			b.Logf("hooks served by process %d on CPUs %s at %s", cmd.Process.Pid, cpus, url)
			return string(url)
		}
		select {
		case <-exited:
			b.Fatalf("the hook server on CPUs %s exited", cpus)
		default:
		}
	}
	b.Fatal("the hook server wrote no URL within 30s")
	return ""
}

// serveBenchHooksProcess is the hook server process's main (benchHooksDirEnv): it
// serves until it is killed, or returns the exit code of why it cannot.
func serveBenchHooksProcess(dir string) int {
	if err := serveBenchHooksFrom(dir); err != nil {
		fmt.Fprintf(os.Stderr, "bench hook server: %v\n", err)
	}
	return 1
}

// serveBenchHooksFrom serves the hooks with dir's certificate and key, after writing
// its URL to dir/url (whole, by a rename).
func serveBenchHooksFrom(dir string) error {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", "127.0.0.2:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "url.tmp")
	if err := os.WriteFile(tmp, []byte("https://"+ln.Addr().String()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "url")); err != nil {
		return err
	}
	return (&http.Server{Handler: http.HandlerFunc(serveBenchHook)}).Serve(ln)
}

func serveBenchHook(w http.ResponseWriter, r *http.Request) {
	rv, ok := readReview(w, r)
	if !ok {
		return
	}
	resp := map[string]any{"uid": rv.Request.UID, "allowed": true}
	if name, ok := strings.CutPrefix(r.URL.Path, "/label/"); ok {
		var obj struct {
			Metadata struct{ Labels map[string]string } `json:"metadata"`
		}
		json.Unmarshal(rv.Request.Object, &obj)
		patch := `[{"op":"add","path":"/metadata/labels/bench-` + name + `","value":"yes"}]`
		if obj.Metadata.Labels == nil {
			patch = `[{"op":"add","path":"/metadata/labels","value":{"bench-` + name + `":"yes"}}]`
		}
		resp["patchType"], resp["patch"] = "JSONPatch", json.RawMessage(patch)
	}
	json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.berth.io/v1", "kind": "AdmissionReview", "response": resp})
}

package agent

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/store"
)

// A task group that injects a secret starts while the agent still holds other task groups
// of the namespace that use it and that the server has just deleted (the old runs of a
// move or a rollout, whose deletion the agent has not heard of yet): the agent asks for the
// secret on behalf of the one it starts, which the server knows, not of any of them, which
// it refuses (403), failing the start. Fetched on behalf of any, the start failed in most
// runs of this test.
func TestSecretIsAskedForTheTaskGroupThatStarts(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	createDBSecret(t)
	withSecret := func(name string) *v4.TaskGroup {
		tg := processTG(name)
		tg.Spec.Template.Spec.Processes[0].Secrets = []v4.SecretRef{{SecretName: "db", Items: []v4.SecretItem{
			{Type: v4.InjectEnv, DataKey: "pass", KeyOrPath: "DB_PASS"},
		}}}
		return tg
	}
	ra := startAgent(t, c, t.TempDir(), drv)
	runProcessTGs(t, "0.other.ns-a.c.1") // the agent has listed and watches

	// Ended runs asked to stop, deleted on the server: the agent still has them.
	for i := range 8 {
		old := withSecret(fmt.Sprintf("%d.web.ns-a.c.1", i))
		old.Spec.Desired, old.Status.Phase = v4.DesiredStopped, v4.StatusFinish
		ra.a.setDesired(old, true)
	}
	const name = "0.web.ns-a.c.2"
	createTG(t, withSecret(name))
	waitFor(t, name+" running", func() bool {
		got, err := tgs().Get(context.Background(), testNS, name)
		if err == nil && v4.Terminal(got.Status.Phase) {
			t.Fatalf("the task group ended: %s %q", got.Status.Phase, got.Status.Message)
		}
		return err == nil && got.Status.Phase == v4.StatusRunning
	})
}

// createDBSecret stores the secret the tests' task groups inject: db, whose pass is
// hunter2, in the test namespace.
func createDBSecret(t *testing.T) {
	t.Helper()
	secret := &v4.Secret{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindSecret},
		Metadata: v4.ObjectMeta{Namespace: testNS, Name: "db"},
		Datas:    map[string]v4.SecretData{"pass": {Content: base64.StdEncoding.EncodeToString([]byte("hunter2"))}},
	}
	if err := store.Typed[*v4.Secret](testStore, v4.KindSecret).Create(context.Background(), secret, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

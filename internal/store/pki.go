package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/berthhq/berth/internal/pki"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// caKey holds the cluster's CA: its certificate and its private key, sealed with the
// encryption keys like a secret, so every server of a cluster signs with the same CA and
// etcd's files never hold the key in the clear (docs/security.md).
const caKey = prefix + "pki/ca"

type caRecord struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// EnsureCA returns the cluster's CA, creating it with create when the cluster has none.
// Of two servers creating one at once, the first write wins and both use it.
func (s *Store) EnsureCA(ctx context.Context, create func() (*pki.CA, error)) (ca *pki.CA, created bool, err error) {
	if s.keyring == nil {
		return nil, false, errors.New("the cluster CA's key is stored encrypted: this server needs an encryption key file")
	}
	resp, err := s.client.Get(ctx, caKey)
	if err != nil {
		return nil, false, fmt.Errorf("read the cluster CA: %w", wrapEtcd(err))
	}
	if len(resp.Kvs) > 0 {
		ca, err := s.decodeCA(resp.Kvs[0].Value)
		return ca, false, err
	}
	ca, err = create()
	if err != nil {
		return nil, false, err
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, false, err
	}
	val, err := json.Marshal(caRecord{Cert: string(ca.CertPEM), Key: string(keyPEM)})
	if err != nil {
		return nil, false, fmt.Errorf("encode the cluster CA: %w", err)
	}
	sealed := s.keyring.Seal(val, []byte(caKey))
	txn, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(caKey), "=", 0)).
		Then(clientv3.OpPut(caKey, string(sealed))).
		Else(clientv3.OpGet(caKey)).
		Commit()
	if err != nil {
		return nil, false, fmt.Errorf("store the cluster CA: %w", wrapEtcd(err))
	}
	if txn.Succeeded {
		return ca, true, nil
	}
	kvs := txn.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, false, errors.New("the cluster CA was deleted while it was being created; start again")
	}
	ca, err = s.decodeCA(kvs[0].Value)
	return ca, false, err
}

func (s *Store) decodeCA(val []byte) (*pki.CA, error) {
	plain, err := s.openValue([]byte(caKey), val)
	if err != nil {
		return nil, fmt.Errorf("open the cluster CA: %w", err)
	}
	var rec caRecord
	if err := json.Unmarshal(plain, &rec); err != nil {
		return nil, fmt.Errorf("decode the cluster CA: %w", err)
	}
	ca, err := pki.ParseCA([]byte(rec.Cert), []byte(rec.Key))
	if err != nil {
		return nil, fmt.Errorf("the cluster CA in etcd: %w", err)
	}
	return ca, nil
}

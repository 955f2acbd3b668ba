package store

import (
	"context"
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Admission webhook configurations and certificate signing requests
// (docs/policy.md, "Admission webhooks") are cluster-wide documents of their own:
//
//	/berth/v1/admissionwebhooks/{name}     a configuration (JSON, as validated)
//	/berth/v1/certificaterequests/{name}   a signing request and, once approved, its certificate
//
// Both are written by the server's handlers after their validation; names are DNS
// subdomains (no "/"). Each range holds a bounded number of documents, so no loop of
// writes fills etcd.
const (
	webhookPrefix     = prefix + "admissionwebhooks/"
	certRequestPrefix = prefix + "certificaterequests/"
)

// MaxCertificateRequests bounds the signing requests a cluster keeps.
const MaxCertificateRequests = 256

// docRange is one range of cluster-wide documents by name.
type docRange struct {
	prefix, what string
	max          int
}

var (
	webhookDocs     = docRange{webhookPrefix, "admission webhook configuration", v4.MaxWebhookConfigs}
	certRequestDocs = docRange{certRequestPrefix, "certificate signing request", MaxCertificateRequests}
)

func (d docRange) key(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || len(name) > 253 {
		return "", fmt.Errorf("%w: %s name %q", ErrInvalid, d.what, name)
	}
	return d.prefix + name, nil
}

func (d docRange) list(ctx context.Context, s *Store) ([]StoredDoc, error) {
	resp, err := s.client.Get(ctx, d.prefix, clientv3.WithPrefix(), clientv3.WithLimit(int64(2*d.max)))
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", d.what, wrapEtcd(err))
	}
	out := make([]StoredDoc, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, StoredDoc{Name: string(kv.Key[len(d.prefix):]), Value: kv.Value, Rev: kv.ModRevision})
	}
	return out, nil
}

func (d docRange) get(ctx context.Context, s *Store, name string) (StoredDoc, error) {
	key, err := d.key(name)
	if err != nil {
		return StoredDoc{}, fmt.Errorf("%s %q: %w", d.what, name, ErrNotFound)
	}
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return StoredDoc{}, fmt.Errorf("read %s %s: %w", d.what, name, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return StoredDoc{}, fmt.Errorf("%s %s: %w", d.what, name, ErrNotFound)
	}
	return StoredDoc{Name: name, Value: resp.Kvs[0].Value, Rev: resp.Kvs[0].ModRevision}, nil
}

// put creates the document (rev -1: it must not exist), replaces it (rev > 0: at that
// mod revision) or writes it either way (rev 0). It returns the new revision and
// whether it created the document.
func (d docRange) put(ctx context.Context, s *Store, name string, val []byte, rev int64) (int64, bool, error) {
	key, err := d.key(name)
	if err != nil {
		return 0, false, err
	}
	cur, err := s.client.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return 0, false, fmt.Errorf("read %s %s: %w", d.what, name, wrapEtcd(err))
	}
	create := cur.Count == 0
	if create {
		count, err := s.client.Get(ctx, d.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, false, fmt.Errorf("count %ss: %w", d.what, wrapEtcd(err))
		}
		if count.Count >= int64(d.max) {
			return 0, false, fmt.Errorf("%w: the cluster holds %d %ss, the most it keeps: delete some first", ErrInvalid, count.Count, d.what)
		}
	}
	var cmp clientv3.Cmp
	switch {
	case rev < 0 || (rev == 0 && create):
		cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	case rev > 0:
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", rev)
	default:
		cmp = clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).Commit()
	if err != nil {
		return 0, false, fmt.Errorf("write %s %s: %w", d.what, name, wrapEtcd(err))
	}
	if !resp.Succeeded {
		if rev < 0 {
			return 0, false, fmt.Errorf("%s %s: %w", d.what, name, ErrAlreadyExists)
		}
		return 0, false, fmt.Errorf("%s %s: %w (written meanwhile: read it again)", d.what, name, ErrConflict)
	}
	return resp.Header.Revision, create, nil
}

func (d docRange) delete(ctx context.Context, s *Store, name string) (StoredDoc, error) {
	cur, err := d.get(ctx, s, name)
	if err != nil {
		return StoredDoc{}, err
	}
	key, _ := d.key(name)
	if _, err := s.client.Delete(ctx, key); err != nil {
		return StoredDoc{}, fmt.Errorf("delete %s %s: %w", d.what, name, wrapEtcd(err))
	}
	return cur, nil
}

// AdmissionWebhooks lists the webhook configurations.
func (s *Store) AdmissionWebhooks(ctx context.Context) ([]StoredDoc, error) {
	return webhookDocs.list(ctx, s)
}

// AdmissionWebhook reads one configuration.
func (s *Store) AdmissionWebhook(ctx context.Context, name string) (StoredDoc, error) {
	return webhookDocs.get(ctx, s, name)
}

// PutAdmissionWebhook writes a configuration (rev as docRange.put).
func (s *Store) PutAdmissionWebhook(ctx context.Context, name string, val []byte, rev int64) (int64, bool, error) {
	return webhookDocs.put(ctx, s, name, val, rev)
}

// DeleteAdmissionWebhook deletes a configuration and returns it.
func (s *Store) DeleteAdmissionWebhook(ctx context.Context, name string) (StoredDoc, error) {
	return webhookDocs.delete(ctx, s, name)
}

// CertificateRequests lists the signing requests.
func (s *Store) CertificateRequests(ctx context.Context) ([]StoredDoc, error) {
	return certRequestDocs.list(ctx, s)
}

// CertificateRequest reads one signing request.
func (s *Store) CertificateRequest(ctx context.Context, name string) (StoredDoc, error) {
	return certRequestDocs.get(ctx, s, name)
}

// PutCertificateRequest writes a signing request (rev as docRange.put).
func (s *Store) PutCertificateRequest(ctx context.Context, name string, val []byte, rev int64) (int64, bool, error) {
	return certRequestDocs.put(ctx, s, name, val, rev)
}

// DeleteCertificateRequest deletes a signing request.
func (s *Store) DeleteCertificateRequest(ctx context.Context, name string) (StoredDoc, error) {
	return certRequestDocs.delete(ctx, s, name)
}

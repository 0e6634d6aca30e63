package sharedredis_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// writeCert writes a certificate (PEM) signed by parent (itself when nil)
// and its key; it answers the certificate and key for signing others.
func writeCert(t *testing.T, dir, name string, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{name + ".pem": {Type: "CERTIFICATE", Bytes: der}, name + ".key": {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// The cluster TLS settings against a redis-server that speaks TLS: the CA
// file verifies it, a server name it does not hold is refused, and so is a
// connection without TLS. A handshake on a loaded machine (make test runs
// this under the race detector beside other packages) may take longer than
// any short deadline: the accepted settings are waited for (Patience), and
// a refusal must say why, so that a timeout never passes for one.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	ca, caKey := writeCert(t, dir, "ca", &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	writeCert(t, dir, "redis", &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis.test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: []string{"redis.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	// The plain port stays for the helper's readiness check; the test
	// talks to the TLS port.
	tlsAddr := testutil.FreeAddr(t)
	_, tlsPort, _ := net.SplitHostPort(tlsAddr)
	testutil.NewRedis(t, "--tls-port", tlsPort, "--tls-cert-file", filepath.Join(dir, "redis.pem"), "--tls-key-file", filepath.Join(dir, "redis.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "no")
	ctx := context.Background()
	for _, c := range []struct {
		name string
		tls  config.ClusterTLS
		// refused is what the error says when the settings are refused
		// ("" accepted): Redis drops a connection without TLS (EOF, or a
		// reset), and no refusal is a timeout.
		refused string
	}{
		{"verified by the CA file", config.ClusterTLS{Enabled: true, CAFile: filepath.Join(dir, "ca.pem")}, ""},
		{"verified as redis.test", config.ClusterTLS{Enabled: true, CAFile: filepath.Join(dir, "ca.pem"), ServerName: "redis.test"}, ""},
		{"a name the certificate does not hold", config.ClusterTLS{Enabled: true, CAFile: filepath.Join(dir, "ca.pem"), ServerName: "other.test"}, "not other.test"},
		{"system roots only", config.ClusterTLS{Enabled: true}, "certificate signed by unknown authority"},
		{"without TLS", config.ClusterTLS{}, "redis ping at"},
	} {
		r := testutil.NewSharedRedis(t, tlsAddr, func(cc *config.Cluster) { cc.TLS, cc.Timeout = c.tls, 10*time.Second })
		var err error
		if c.refused == "" {
			testutil.Eventually(t, 0, c.name+": a Ping over TLS", func() bool { err = r.Ping(ctx); return err == nil }, func() string { return fmt.Sprint(err) })
			continue
		}
		err = r.Ping(ctx)
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), tlsAddr) {
			t.Errorf("%s: Ping = %v, want a refusal naming %s that says %q", c.name, err, tlsAddr, c.refused)
		}
	}
}

package sharedredis

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// The files the validated cluster section (config.Cluster) names: read
// here, where the connection is made, so that checking a configuration
// works where the secrets are not.

// tlsConfig reads the TLS files; nil when TLS is off.
func tlsConfig(c *config.Cluster) (*tls.Config, error) {
	t := c.TLS
	if !t.Enabled {
		return nil, nil
	}
	host, _, _ := net.SplitHostPort(c.Address)
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // the user's explicit choice
	if t.ServerName != "" {
		tc.ServerName = t.ServerName
	}
	if t.CAFile != "" {
		pem, err := secrets.ReadAtMost(t.CAFile, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("TLS CA file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA file %s holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" {
		certPEM, err := secrets.ReadAtMost(t.CertFile, maxPEMBytes)
		var keyPEM []byte
		if err == nil {
			keyPEM, err = secrets.ReadAtMost(t.KeyFile, maxPEMBytes)
		}
		var cert tls.Certificate
		if err == nil {
			cert, err = tls.X509KeyPair(certPEM, keyPEM)
		}
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// maxPEMBytes bounds a read of a TLS file (a CA bundle of every public
// root is ~200 KiB): a wrong path is refused, not read until memory runs out.
const maxPEMBytes = 1 << 20

// ForwardSecret reads c's forward secret file: at least 16 bytes, one
// line. Its absence is an error: the agent job gateway on replicas needs
// it.
func ForwardSecret(c *config.Cluster) ([]byte, error) {
	if c.ForwardSecretFile == "" {
		return nil, errors.New("no forward secret: the agent job gateway on replicas needs a secret file shared by every replica " +
			"(cluster.forward_secret_file, --cluster.forward-secret-file), e.g. the output of `head -c 32 /dev/urandom | base64`")
	}
	s, err := secrets.Read(c.ForwardSecretFile, secrets.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("forward secret file: %w", err)
	}
	if len(s) < 16 {
		return nil, fmt.Errorf("forward secret file %s: %d bytes, want at least 16", c.ForwardSecretFile, len(s))
	}
	return []byte(s), nil
}

// readPassword reads the password file path, what names it in errors (""
// when none is configured). go-redis takes it as a string.
func readPassword(path, what string) (string, error) {
	if path == "" {
		return "", nil
	}
	pw, err := secrets.Read(path, secrets.MaxBytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return pw, nil
}

// sentinelPassword reads the sentinels' password file, once.
func sentinelPassword(c *config.Cluster) (string, error) {
	return readPassword(c.Sentinel.PasswordFile, "sentinel password file")
}

// password reads the Redis password file.
func password(c *config.Cluster) (string, error) {
	return readPassword(c.PasswordFile, "redis password file")
}

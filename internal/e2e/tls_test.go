// tls_test.go replicates from a primary that only accepts encrypted
// connections: the source URL's tls parameter covers the binlog dump too,
// and a URL without it is refused with a message that says why.
package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

func TestReplicateFromAPrimaryThatRequiresTLS(t *testing.T) {
	certFile, keyFile := selfSignedCert(t)
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, PrimaryExtra: []string{
		"ssl_cert=" + certFile, "ssl_key=" + keyFile, "require_secure_transport=ON",
	}})
	smallWorkload(t, sb, 200, 9)
	relay := filepath.Join(t.TempDir(), "relay")

	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "source", "over TLS", "tls=true")

	r = gapless(t, nil, replicateArgs(sb.SourceURL+"?tls=skip-verify", sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary))...)
	if r.code != 0 {
		t.Fatalf("replicate over TLS exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	sb.SourceURL += "?tls=skip-verify" // for the comparison's own connection
	requireEqual(t, sb)
}

// selfSignedCert writes a certificate and key for 127.0.0.1 and returns their paths.
func selfSignedCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

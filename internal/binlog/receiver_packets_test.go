package binlog

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gapless/internal/gtid"
	"gapless/internal/sandbox"
)

// TestReceiverReadsTheDumpsPackets: the dump's packets, read by
// packetReader from the connection underneath the binlog library's, come
// whole from a real source, plain and over TLS (the connection the library
// upgraded to): hundreds of small events and one larger than the reader's
// buffer.
func TestReceiverReadsTheDumpsPackets(t *testing.T) {
	certFile, keyFile := selfSignedCert(t)
	srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "primary", Binlog: true, Extra: []string{
		"ssl_cert=" + certFile, "ssl_key=" + keyFile,
	}})
	ctx := context.Background()
	stmts := []string{"CREATE DATABASE pkt", "CREATE TABLE pkt.t (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB"}
	for i := range 300 {
		stmts = append(stmts, "INSERT INTO pkt.t VALUES ("+strconv.Itoa(i)+", REPEAT('x', "+strconv.Itoa(i*2)+"))")
	}
	stmts = append(stmts, "INSERT INTO pkt.t VALUES (1000, REPEAT('y', 3 << 20))")
	if err := srv.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	db, err := srv.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		name string
		tls  *tls.Config
		then string // run after the dump (it writes a GTID too)
	}{
		{"plain", nil, "ALTER USER " + sandbox.ReplUser + " REQUIRE SSL"},
		{"tls", &tls.Config{InsecureSkipVerify: true}, ""},
	} {
		var written string
		if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&written); err != nil {
			t.Fatal(err)
		}
		relay := openTestRelay(t, t.TempDir(), 0)
		r := NewReceiver(ReceiverConfig{Host: "127.0.0.1", Port: uint16(srv.Port), User: sandbox.ReplUser, Password: sandbox.ReplPassword,
			ServerID: 99, Heartbeat: time.Second, TLS: tc.tls}, relay)
		run, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(run) }()
		waitFor(t, 30*time.Second, tc.name+" dump to reach "+written, func() bool { return relay.End().String() == written })
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		largest := 0
		for _, txn := range decodeAll(t, relay, gtid.MariaDBPosition{}) {
			largest = max(largest, txn.Size)
		}
		if largest < 3<<20 {
			t.Fatalf("%s: the largest transaction received has %d bytes, want the 3 MiB row's", tc.name, largest)
		}
		if tc.then != "" {
			if err := srv.Exec(ctx, tc.then); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// selfSignedCert writes a certificate and key for 127.0.0.1 and returns
// their paths.
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

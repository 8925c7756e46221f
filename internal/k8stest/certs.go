package k8stest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is what the API server needs to serve TLS and sign service-account
// tokens, written under dir.
type pki struct {
	CertFile, KeyFile string // self-signed serving certificate, also the CA clients trust
	SAKeyFile         string // RSA key that signs service-account tokens
	CertPEM           []byte
}

func writePKI(dir string) (pki, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pki{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "benchq-k8stest-apiserver"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:              []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return pki{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return pki{}, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return pki{}, err
	}
	p := pki{
		CertFile:  filepath.Join(dir, "apiserver.crt"),
		KeyFile:   filepath.Join(dir, "apiserver.key"),
		SAKeyFile: filepath.Join(dir, "sa.key"),
		CertPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{p.CertFile, p.CertPEM},
		{p.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
		{p.SAKeyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return pki{}, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return p, nil
}

package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// tlsFlags serve HTTPS, and with it HTTP/2, from Tessera itself: no reverse
// proxy needed on one small machine. Over HTTP/1.1 a browser opens at most
// six connections to a server, and every page with a live section holds
// one; over HTTP/2 they share one connection.
type tlsFlags struct {
	Cert, Key string
}

func addTLSFlags(cmd *cobra.Command, f *tlsFlags) {
	cmd.Flags().StringVar(&f.Cert, "tls-cert", envOr("TESSERA_TLS_CERT", ""), "PEM certificate (chain) file: serve HTTPS and HTTP/2; needs --tls-key; SIGHUP reloads both (env TESSERA_TLS_CERT)")
	cmd.Flags().StringVar(&f.Key, "tls-key", envOr("TESSERA_TLS_KEY", ""), "PEM private key file of --tls-cert (env TESSERA_TLS_KEY)")
}

// certStore holds the served certificate; reload reads the files again.
type certStore struct {
	cert, key string
	mu        sync.RWMutex
	current   *tls.Certificate
}

// settings checks the TLS flags and loads the certificate: nil when TLS is
// off, a usage error naming the files when they cannot serve.
func (f tlsFlags) settings() (*certStore, error) {
	switch {
	case f.Cert == "" && f.Key == "":
		return nil, nil
	case f.Cert == "":
		return nil, usageErr("--tls-key needs --tls-cert (the certificate that goes with the key), or leave both out to serve plain HTTP")
	case f.Key == "":
		return nil, usageErr("--tls-cert needs --tls-key (the certificate's private key), or leave both out to serve plain HTTP")
	}
	cs := &certStore{cert: f.Cert, key: f.Key}
	if err := cs.reload(); err != nil {
		return nil, usageErr("%v", err)
	}
	return cs, nil
}

// reload reads the certificate and key files; on an error the certificate
// served so far stays.
func (cs *certStore) reload() error {
	c, err := tls.LoadX509KeyPair(cs.cert, cs.key)
	if err != nil {
		return fmt.Errorf("--tls-cert %s / --tls-key %s: %v (give the PEM certificate chain and the PEM private key that belongs to it)", cs.cert, cs.key, err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return fmt.Errorf("--tls-cert %s: %v", cs.cert, err)
		}
	}
	cs.mu.Lock()
	cs.current = &c
	cs.mu.Unlock()
	return nil
}

// expires is when the served certificate stops being valid.
func (cs *certStore) expires() time.Time {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	return cs.current.Leaf.NotAfter
}

func (cs *certStore) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			cs.mu.RLock()
			defer cs.mu.RUnlock()
			return cs.current, nil
		},
	}
}

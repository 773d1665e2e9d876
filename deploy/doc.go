// Package deploy holds no code: it is the deployment files of Tessera on
// PostgreSQL with several instances (compose.yaml: PostgreSQL, three
// instances of the repository's one image, a Caddy proxy configured by
// Caddyfile), and the test that keeps them consistent with the server's
// settings (README, "Scaling out").
package deploy

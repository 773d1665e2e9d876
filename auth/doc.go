// Package auth holds the pure security primitives of accounts: argon2id
// password hashes and the slots that bound how many run at once, API token
// secrets, the sign-in limit's form, and the checks by which instances
// sharing a database compare their session keys without revealing them.
//
// It imports nothing of Tessera's: no web, no database. Where limits are
// counted (the database) and how refusals are worded (handlers) live
// elsewhere; what a secret or a hash is lives here.
package auth

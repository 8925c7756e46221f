// Package pgscram sets PostgreSQL passwords by their SCRAM-SHA-256
// verifier (RFC 5802, RFC 7677; PostgreSQL's "SCRAM-SHA-256$<iterations>:
// <salt>$<StoredKey>:<ServerKey>"), never by the password itself: ALTER
// ROLE takes no parameters, so whatever it sets is in the statement's text,
// and that text can reach the server's log (a failed statement is logged
// with it; log_statement = 'all' logs every one). A verifier lets the
// server check a login and no one log in with it.
package pgscram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Iterations is PostgreSQL's default (scram_iterations).
const Iterations = 4096

// Verifier is password's SCRAM-SHA-256 verifier with a fresh random salt.
// Passwords are printable ASCII: PostgreSQL normalises any other one
// (SASLprep) before it hashes it, which this does not.
func Verifier(password string) (string, error) {
	if password == "" {
		return "", fmt.Errorf("empty password")
	}
	for i, r := range password {
		if r < 0x20 || r > 0x7e {
			return "", fmt.Errorf("the password holds a character other than printable ASCII at byte %d: benchq sets printable ASCII passwords only (PostgreSQL normalises others before it hashes them)", i)
		}
	}
	salt := make([]byte, 16)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go 1.24)
	salted, err := pbkdf2.Key(sha256.New, password, salt, Iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	clientKey := mac(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := mac(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", Iterations, b64(salt), b64(storedKey[:]), b64(serverKey)), nil
}

func mac(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// AlterRole is the statement that gives role password (by its verifier)
// and, with login, turns its login on.
func AlterRole(role, password string, login bool) (string, error) {
	v, err := Verifier(password)
	if err != nil {
		return "", fmt.Errorf("the password of %s: %w", role, err)
	}
	on := ""
	if login {
		on = " LOGIN"
	}
	// A verifier is base64 and "$:": nothing to escape in the literal.
	return "ALTER ROLE " + pgx.Identifier{role}.Sanitize() + on + " PASSWORD '" + strings.ReplaceAll(v, "'", "''") + "'", nil
}

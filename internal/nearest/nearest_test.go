package nearest

import "testing"

func TestName(t *testing.T) {
	names := []string{"PostgreSQL", "PgBouncer", "Redis", "RedisCluster", "nbp", "nlp"}
	for typed, want := range map[string]string{
		"PostgresSQL": "PostgreSQL", // one letter too many
		"postgresql":  "PostgreSQL", // case only
		"Rdis":        "Redis",
		"nbpp":        "nbp",
		"MySQL":       "", // nothing near
		"nb":          "", // too short to guess
		"RedisClustr": "RedisCluster",
	} {
		if got := Name(typed, names); got != want {
			t.Errorf("Name(%q) = %q, want %q", typed, got, want)
		}
	}
}

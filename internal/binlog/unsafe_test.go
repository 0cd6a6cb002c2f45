package binlog

import (
	"slices"
	"testing"
)

func TestUnsafeKinds(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"INSERT INTO t VALUES (1, SYSDATE())", []string{"SYSDATE()"}},
		{"insert into t values (uuid(), uuid_short())", []string{"UUID()", "UUID_SHORT()"}},
		{"UPDATE t SET who = USER(), at = NOW()", []string{"USER()"}},
		{"UPDATE t SET who = CURRENT_USER(), r = RAND()", nil},
		{"INSERT INTO t VALUES ('SYSDATE()', \"uuid()\")", nil},
		{"INSERT INTO t (`user`) VALUES (1) /* user() */ -- uuid()\n", nil},
		{"SELECT t.user (1)", nil},
		{"INSERT INTO t SELECT FOUND_ROWS()", []string{"FOUND_ROWS()"}},
		{"DELETE FROM t WHERE a < 5 LIMIT 10", []string{"UPDATE/DELETE with LIMIT and no ORDER BY"}},
		{"DELETE FROM t WHERE a < 5 ORDER BY id LIMIT 10", nil},
		{"INSERT INTO t SELECT * FROM u LIMIT 3", nil},
		{"INSERT INTO t VALUES ('it''s', SYSDATE ())", []string{"SYSDATE()"}},
		{"INSERT INTO t VALUES ('a\\'b', 1) /*!100000 , (uuid()) */", []string{"UUID()"}},
	}
	for _, tt := range tests {
		if got := UnsafeKinds(tt.query); !slices.Equal(got, tt.want) {
			t.Errorf("UnsafeKinds(%q) = %q, want %q", tt.query, got, tt.want)
		}
	}
}

func BenchmarkUnsafeKindsSysbench(b *testing.B) {
	q := "INSERT INTO sbtest1 (id, k, c, pad) VALUES (5001, 4998, '67847967377-48000963322-62604785301-91415491898-96926520291-65991568306-91217869287-77467541427-59442880722-97211591330', '22195207048-70116052123-74140395089-76317954521-98694025897')"
	for i := 0; i < b.N; i++ {
		UnsafeKinds(q)
	}
}

package binlog

import (
	"regexp"
	"slices"
	"strings"
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
		{"UPDATE t SET a = mysleep(1), b = @sleep (2), c = d.sleep(3)", nil},
		{"UPDATE t SET a = version\n\t(), b = é_sleep(1), c = ésleep(2)", []string{"VERSION()", "SLEEP()"}},
		{"DO SLEEP(1), GET_LOCK('a', 1)", []string{"SLEEP()", "GET_LOCK()"}},
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

// FuzzUnsafeKinds checks UnsafeKinds's scan against the rule it implements,
// written as regular expressions: a name not preceded by a letter, digit,
// _, $, . or @, then "(" after any white space.
func FuzzUnsafeKinds(f *testing.F) {
	for _, q := range []string{"INSERT INTO t VALUES (1, SYSDATE())", "UPDATE t SET a = x.user(), b = @uuid (1)",
		"SELECT sleep\n(1) /* uuid() */", "DELETE FROM t LIMIT 1", "é_sleep(1) $user(2) user$(3)"} {
		f.Add(q)
	}
	var res []*regexp.Regexp
	for _, name := range unsafeFunctions {
		res = append(res, regexp.MustCompile(`(^|[^A-Z0-9_$.@])`+name+`\s*\(`))
	}
	f.Fuzz(func(t *testing.T, q string) {
		text := strings.ToUpper(string(blankQuoted([]byte(q))))
		if text != string(upperBlanked(q)) {
			return // a non-ASCII letter that upper-cases to ASCII (ı, ſ, K): names are ASCII in MariaDB
		}
		var want []string
		for i, re := range res {
			if re.MatchString(text) {
				want = append(want, unsafeFunctions[i]+"()")
			}
		}
		if strings.Contains(text, "LIMIT") && limitWithoutOrder.MatchString(text) && !strings.Contains(text, "ORDER BY") {
			want = append(want, "UPDATE/DELETE with LIMIT and no ORDER BY")
		}
		if got := UnsafeKinds(q); !slices.Equal(got, want) {
			t.Errorf("UnsafeKinds(%q) = %q, want %q", q, got, want)
		}
	})
}

package checkpoint

import (
	"strings"
	"testing"
	"time"

	"gapless/internal/gtid"
)

func TestGuarded(t *testing.T) {
	s := &Store{stream: "it's ) VALUES ( odd"}
	g := gtid.MariaDBGTID{Domain: 3, Server: 7, Seq: 42}
	for name, stmt := range map[string]string{
		"strict": s.Statement(AloneSlots, g, time.Unix(1, 0)),
		"causal": s.CausalStatement(AloneSlots, g, time.Unix(1, 0), gtid.MariaDBPosition{}, []gtid.MariaDBGTID{{Domain: 3, Server: 7, Seq: 44}}),
	} {
		guarded, ok := Guarded(stmt, g)
		if !ok {
			t.Fatalf("%s: not guarded: %s", name, stmt)
		}
		values := stmt[strings.Index(stmt, valuesClause)+len(valuesClause) : strings.LastIndex(stmt, upsertClause)]
		want := strings.Replace(stmt, valuesClause+values+upsertClause,
			") SELECT "+values+" FROM DUAL WHERE COALESCE(LPAD(SUBSTRING_INDEX(REGEXP_SUBSTR(CONCAT(_utf8mb4',', @@global.gtid_binlog_pos), "+
				"_utf8mb4',3-[0-9]+-[0-9]+'), _utf8mb4'-', -1), 20, _utf8mb4'0'), _utf8mb4'0') <= _utf8mb4'00000000000000000042' ON DUPLICATE KEY UPDATE ", 1)
		if guarded != want {
			t.Errorf("%s:\n got %s\nwant %s", name, guarded, want)
		}
		if strings.Contains(values, "DEFAULT") {
			t.Errorf("%s: DEFAULT among the values, which a SELECT refuses: %s", name, values)
		}
	}
	if _, ok := Guarded("INSERT INTO x VALUES (1)", g); ok {
		t.Error("a statement that is not a position row was guarded")
	}
}

package target

import "testing"

func TestWithoutGTIDAssignments(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"set statement gtid_domain_id = 20 for insert into t1 values (3),(4)", "insert into t1 values (3),(4)"},
		{"SET STATEMENT @@session.server_id=5, sql_mode='' FOR UPDATE t SET a = 1", "SET STATEMENT sql_mode='' FOR UPDATE t SET a = 1"},
		{"SET STATEMENT sql_mode='for, x', gtid_seq_no = 7 FOR DELETE FROM t", "SET STATEMENT sql_mode='for, x' FOR DELETE FROM t"},
		{"SET STATEMENT max_statement_time=(1+2) FOR SELECT 1", "SET STATEMENT max_statement_time=(1+2) FOR SELECT 1"},
		{"set statement last_insert_id=@a for insert into t1 values (NULL, @a, last_insert_id())", "set statement last_insert_id=@a for insert into t1 values (NULL, @a, last_insert_id())"},
		{"/* c */ SET STATEMENT `gtid_domain_id`=3 FOR INSERT INTO t VALUES ('for')", "INSERT INTO t VALUES ('for')"},
		{"SET gtid_domain_id = 3", "SET gtid_domain_id = 3"},
		{"SET STATEMENT gtid_domain_id = 'unclosed FOR x", "SET STATEMENT gtid_domain_id = 'unclosed FOR x"},
		{"INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (1)"},
	} {
		if got := withoutGTIDAssignments(c.in); got != c.want {
			t.Errorf("withoutGTIDAssignments(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

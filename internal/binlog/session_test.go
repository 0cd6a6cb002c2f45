// Tests of the session-state decoders and of the SET statements built from them.
package binlog

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

func littleEndian16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func littleEndian32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func littleEndian64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// statusVar encodes one status variable: its code followed by its payload.
func statusVar(code byte, payload ...[]byte) []byte {
	b := []byte{code}
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

func joinBytes(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// singleStatusVars holds one well-formed encoding of every known code.
var singleStatusVars = []struct {
	name  string
	raw   []byte
	check func(SessionState) bool
}{
	{"flags2", statusVar(StatusFlags2, littleEndian32(Flags2NoForeignKeyChecks|Flags2AutoIsNull)),
		func(s SessionState) bool { return s.HasFlags2 && s.Flags2 == Flags2NoForeignKeyChecks|Flags2AutoIsNull }},
	{"sql_mode", statusVar(StatusSQLMode, littleEndian64(1411383296)),
		func(s SessionState) bool { return s.HasSQLMode && s.SQLMode == 1411383296 }},
	{"catalog", statusVar(StatusCatalog, []byte{3}, []byte("std\x00")),
		func(s SessionState) bool { return s.Catalog == "std" }},
	{"auto_increment", statusVar(StatusAutoIncrement, littleEndian16(3), littleEndian16(2)),
		func(s SessionState) bool {
			return s.HasAutoIncrement && s.AutoIncrementIncrement == 3 && s.AutoIncrementOffset == 2
		}},
	{"charset", statusVar(StatusCharset, littleEndian16(45), littleEndian16(224), littleEndian16(8)),
		func(s SessionState) bool {
			return s.HasCharset && s.CharsetClient == 45 && s.CollationConnection == 224 && s.CollationServer == 8
		}},
	{"time_zone", statusVar(StatusTimeZone, []byte{6}, []byte("+01:00")),
		func(s SessionState) bool { return s.HasTimeZone && s.TimeZone == "+01:00" }},
	{"catalog_nz", statusVar(StatusCatalogNZ, []byte{3}, []byte("std")),
		func(s SessionState) bool { return s.Catalog == "std" }},
	{"lc_time_names", statusVar(StatusLCTimeNames, littleEndian16(4)),
		func(s SessionState) bool { return s.HasLCTimeNames && s.LCTimeNames == 4 }},
	{"charset_database", statusVar(StatusCharsetDatabase, littleEndian16(46)),
		func(s SessionState) bool { return s.HasCollationDatabase && s.CollationDatabase == 46 }},
	{"table_map_for_update", statusVar(StatusTableMapForUpdate, littleEndian64(0x8001)),
		func(s SessionState) bool { return s.TableMapForUpdate == 0x8001 }},
	{"master_data_written", statusVar(StatusMasterDataWritten, littleEndian32(77)),
		func(s SessionState) bool { return s.MasterDataWritten == 77 }},
	{"invoker", statusVar(StatusInvoker, []byte{4}, []byte("root"), []byte{9}, []byte("localhost")),
		func(s SessionState) bool {
			return s.HasInvoker && s.InvokerUser == "root" && s.InvokerHost == "localhost"
		}},
	{"updated_db_names", statusVar(StatusUpdatedDBNames, []byte{2}, []byte("a\x00bc\x00")),
		func(s SessionState) bool {
			return s.HasUpdatedDBNames && !s.UpdatedDBNamesOverflow && reflect.DeepEqual(s.UpdatedDBNames, []string{"a", "bc"})
		}},
	{"updated_db_names_overflow", statusVar(StatusUpdatedDBNames, []byte{254}),
		func(s SessionState) bool {
			return s.HasUpdatedDBNames && s.UpdatedDBNamesOverflow && s.UpdatedDBNames == nil
		}},
	{"microseconds", statusVar(StatusMicroseconds, []byte{0x3f, 0x42, 0x0f}),
		func(s SessionState) bool { return s.Micros == 999999 }},
	{"explicit_defaults_for_timestamp", statusVar(StatusExplicitDefaultsForTimestamp, []byte{1}),
		func(s SessionState) bool { return s.HasExplicitDefaultsForTimestamp && s.ExplicitDefaultsForTimestamp }},
	{"ddl_logged_with_xid", statusVar(StatusDDLLoggedWithXID, littleEndian64(42)),
		func(s SessionState) bool { return s.HasXID && s.XID == 42 }},
	{"default_collation_for_utf8mb4", statusVar(StatusDefaultCollationForUTF8MB4, littleEndian16(255)),
		func(s SessionState) bool {
			return s.HasDefaultCollationForUTF8MB4 && s.DefaultCollationForUTF8MB4 == 255
		}},
	{"sql_require_primary_key", statusVar(StatusSQLRequirePrimaryKey, []byte{1}),
		func(s SessionState) bool { return s.HasSQLRequirePrimaryKey && s.SQLRequirePrimaryKey }},
	{"default_table_encryption", statusVar(StatusDefaultTableEncryption, []byte{0}),
		func(s SessionState) bool { return s.HasDefaultTableEncryption && !s.DefaultTableEncryption }},
	{"hrnow", statusVar(StatusHRNow, []byte{0xa0, 0x2c, 0x02}),
		func(s SessionState) bool { return s.Micros == 142496 }},
	{"xid", statusVar(StatusXID, littleEndian64(6)),
		func(s SessionState) bool { return s.HasXID && s.XID == 6 }},
	{"gtid_flags3_start_alter", statusVar(StatusGTIDFlags3, []byte{2}),
		func(s SessionState) bool { return s.GTIDFlags3 == 2 && s.StartAlterSeqNo == 0 }},
	{"gtid_flags3_commit_alter", statusVar(StatusGTIDFlags3, []byte{4}, littleEndian64(99)),
		func(s SessionState) bool { return s.GTIDFlags3 == 4 && s.StartAlterSeqNo == 99 }},
	{"character_set_collations", statusVar(StatusCharacterSetCollations, []byte{2}, littleEndian16(45), littleEndian16(2347), littleEndian16(8), littleEndian16(8)),
		func(s SessionState) bool {
			return s.HasCharacterSetCollations &&
				reflect.DeepEqual(s.CharacterSetCollations, []CharsetCollation{{45, 2347}, {8, 8}})
		}},
	{"character_set_collations_empty", statusVar(StatusCharacterSetCollations, []byte{0}),
		func(s SessionState) bool { return s.HasCharacterSetCollations && len(s.CharacterSetCollations) == 0 }},
	{"dummy", statusVar(StatusDummy),
		func(s SessionState) bool { return !s.HasFlags2 }},
}

func TestDecodeQueryStatusVarsEachCode(t *testing.T) {
	for _, tc := range singleStatusVars {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DecodeQueryStatusVars(tc.raw)
			if err != nil {
				t.Fatalf("DecodeQueryStatusVars(%x): %v", tc.raw, err)
			}
			if !tc.check(s) {
				t.Fatalf("DecodeQueryStatusVars(%x) = %+v", tc.raw, s)
			}
		})
	}
}

func TestDecodeQueryStatusVarsDefaults(t *testing.T) {
	s, err := DecodeQueryStatusVars(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := SessionState{
		Flags2Mask:             DefaultFlags2Mask,
		AutoIncrementIncrement: 1,
		AutoIncrementOffset:    1,
		HasAutoIncrement:       true,
		HasLCTimeNames:         true,
		HasCollationDatabase:   true,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
}

// TestDecodeQueryStatusVarsMariaDB decodes blocks written by MariaDB 10.11.19,
// which does not write codes in increasing order.
func TestDecodeQueryStatusVarsMariaDB(t *testing.T) {
	raw := hexBytes(t, "000040000d010000205400000000060373746403030002000421002100080005062b30313a303007040080a02c02")
	s, err := DecodeQueryStatusVars(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := SessionState{
		Flags2:                 Flags2AutoIsNull | Flags2ExplicitDefaultsForTimestamp | Flags2NoForeignKeyChecks | Flags2RelaxedUniqueChecks,
		Flags2Mask:             DefaultFlags2Mask,
		HasFlags2:              true,
		SQLMode:                1411383296,
		HasSQLMode:             true,
		Catalog:                "std",
		AutoIncrementIncrement: 3,
		AutoIncrementOffset:    2,
		HasAutoIncrement:       true,
		CharsetClient:          33,
		CollationConnection:    33,
		CollationServer:        8,
		HasCharset:             true,
		TimeZone:               "+01:00",
		HasTimeZone:            true,
		LCTimeNames:            4,
		HasLCTimeNames:         true,
		HasCollationDatabase:   true,
		Micros:                 142496,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got  %+v\nwant %+v", s, want)
	}

	s, err = DecodeQueryStatusVars(hexBytes(t, "00000000010100002054000000000603737464042100210008000b04726f6f74096c6f63616c686f7374"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasInvoker || s.InvokerUser != "root" || s.InvokerHost != "localhost" || s.Flags2 != Flags2ExplicitDefaultsForTimestamp {
		t.Fatalf("got %+v", s)
	}
}

func TestDecodeQueryStatusVarsDummyStops(t *testing.T) {
	raw := joinBytes(statusVar(StatusFlags2, littleEndian32(0)), []byte{StatusDummy, StatusDummy, 0x99, StatusSQLMode})
	s, err := DecodeQueryStatusVars(raw)
	if err != nil || !s.HasFlags2 || s.HasSQLMode {
		t.Fatalf("got %+v, %v", s, err)
	}
}

func TestDecodeQueryStatusVarsUnknownCode(t *testing.T) {
	for _, code := range []byte{14, 15, 21, 127, 132, 200, 254} {
		raw := joinBytes(statusVar(StatusSQLMode, littleEndian64(7)), []byte{code, 1, 2, 3})
		s, err := DecodeQueryStatusVars(raw)
		if !errors.Is(err, ErrUnknownStatusVar) {
			t.Fatalf("code %d: err = %v, want ErrUnknownStatusVar", code, err)
		}
		if want := "query status var " + strconv.Itoa(int(code)) + " at byte 9"; !strings.Contains(err.Error(), want) {
			t.Fatalf("code %d: error %q does not contain %q", code, err, want)
		}
		if !s.HasSQLMode || s.SQLMode != 7 {
			t.Fatalf("code %d: state before the unknown code lost: %+v", code, s)
		}
	}
}

func TestDecodeQueryStatusVarsTruncated(t *testing.T) {
	for _, tc := range singleStatusVars {
		for n := 1; n < len(tc.raw); n++ {
			_, err := DecodeQueryStatusVars(tc.raw[:n])
			if err == nil || !strings.Contains(err.Error(), "truncated at byte") {
				t.Errorf("%s cut to %d bytes: err = %v, want truncation", tc.name, n, err)
			}
		}
	}
}

func TestDecodeQueryStatusVarsMicrosecondsRange(t *testing.T) {
	_, err := DecodeQueryStatusVars(statusVar(StatusHRNow, []byte{0x40, 0x42, 0x0f}))
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("err = %v", err)
	}
}

func TestQuerySessionState(t *testing.T) {
	header := &replication.EventHeader{Timestamp: 1700000000, EventType: replication.QUERY_EVENT}
	ev := &replication.QueryEvent{SlaveProxyID: 5, StatusVars: statusVar(StatusHRNow, []byte{0x40, 0xe2, 0x01})}
	s, err := QuerySessionState(header, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasTimestamp || s.Seconds != 1700000000 || s.Micros != 123456 || !s.HasPseudoThreadID || s.PseudoThreadID != 5 {
		t.Fatalf("got %+v", s)
	}
	got := s.Statements(nil)
	if got[0] != "SET TIMESTAMP=1700000000.123456" || got[1] != "SET @@session.pseudo_thread_id=5" {
		t.Fatalf("statements %q", got)
	}
	if _, err := QuerySessionState(nil, ev); err == nil {
		t.Fatal("nil header accepted")
	}
}

func fullSessionState() SessionState {
	return SessionState{
		Seconds: 1700000000, Micros: 5, HasTimestamp: true,
		PseudoThreadID: 5, HasPseudoThreadID: true,
		Flags2: Flags2ExplicitDefaultsForTimestamp, Flags2Mask: DefaultFlags2Mask | Flags2ExplicitDefaultsForTimestamp, HasFlags2: true,
		SQLMode: 1411383296, HasSQLMode: true,
		AutoIncrementIncrement: 1, AutoIncrementOffset: 1, HasAutoIncrement: true,
		CharsetClient: 45, CollationConnection: 45, CollationServer: 45, HasCharset: true,
		TimeZone: "SYSTEM", HasTimeZone: true,
		LCTimeNames: 0, HasLCTimeNames: true,
		CollationDatabase: 0, HasCollationDatabase: true,
	}
}

func TestStatementsUnknownPrev(t *testing.T) {
	want := []string{
		"SET TIMESTAMP=1700000000.000005",
		"SET @@session.pseudo_thread_id=5",
		"SET @@session.foreign_key_checks=1, @@session.sql_auto_is_null=0, @@session.unique_checks=1, @@session.autocommit=1, @@session.explicit_defaults_for_timestamp=1",
		"SET @@session.sql_mode=1411383296",
		"SET @@session.auto_increment_increment=1, @@session.auto_increment_offset=1",
		"SET @@session.character_set_client=utf8mb4, @@session.collation_connection=45, @@session.collation_server=45",
		"SET @@session.time_zone=_utf8mb4'SYSTEM'",
		"SET @@session.lc_time_names=0",
		"SET @@session.collation_database=DEFAULT",
	}
	s := fullSessionState()
	if got := s.Statements(nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := s.Statements(&SessionState{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("against an empty prev: got %q", got)
	}
	if got := s.Statements(&s); len(got) != 0 {
		t.Fatalf("against itself: %q", got)
	}
}

func TestStatementsOneFieldDiffers(t *testing.T) {
	tests := []struct {
		name   string
		change func(*SessionState)
		want   string
	}{
		{"timestamp", func(s *SessionState) { s.Seconds, s.Micros = 1700000001, 0 }, "SET TIMESTAMP=1700000001"},
		{"pseudo_thread_id", func(s *SessionState) { s.PseudoThreadID = 9 }, "SET @@session.pseudo_thread_id=9"},
		{"foreign_key_checks", func(s *SessionState) { s.Flags2 |= Flags2NoForeignKeyChecks }, "SET @@session.foreign_key_checks=0"},
		{"sql_auto_is_null", func(s *SessionState) { s.Flags2 |= Flags2AutoIsNull }, "SET @@session.sql_auto_is_null=1"},
		{"unique_checks", func(s *SessionState) { s.Flags2 |= Flags2RelaxedUniqueChecks }, "SET @@session.unique_checks=0"},
		{"autocommit", func(s *SessionState) { s.Flags2 |= Flags2NotAutocommit }, "SET @@session.autocommit=0"},
		{"check_constraint_checks", func(s *SessionState) { s.Flags2 |= Flags2NoCheckConstraintChecks }, "SET @@session.check_constraint_checks=0"},
		{"sql_if_exists", func(s *SessionState) { s.Flags2 |= Flags2IfExists }, "SET @@session.sql_if_exists=1"},
		{"explicit_defaults_for_timestamp", func(s *SessionState) { s.Flags2 &^= Flags2ExplicitDefaultsForTimestamp }, "SET @@session.explicit_defaults_for_timestamp=0"},
		{"system_versioning_insert_history", func(s *SessionState) { s.Flags2 |= Flags2InsertHistory }, "SET @@session.system_versioning_insert_history=1"},
		{"sql_mode", func(s *SessionState) { s.SQLMode = 0 }, "SET @@session.sql_mode=0"},
		{"auto_increment", func(s *SessionState) { s.AutoIncrementOffset = 2 }, "SET @@session.auto_increment_increment=1, @@session.auto_increment_offset=2"},
		{"charset", func(s *SessionState) { s.CollationServer = 8 }, "SET @@session.character_set_client=utf8mb4, @@session.collation_connection=45, @@session.collation_server=8"},
		{"time_zone", func(s *SessionState) { s.TimeZone = "+01:00" }, "SET @@session.time_zone=_utf8mb4'+01:00'"},
		{"time_zone_quote", func(s *SessionState) { s.TimeZone = `a'b\` }, "SET @@session.time_zone=_utf8mb4 X'6127625c'"},
		{"lc_time_names", func(s *SessionState) { s.LCTimeNames = 4 }, "SET @@session.lc_time_names=4"},
		{"collation_database", func(s *SessionState) { s.CollationDatabase = 46 }, "SET @@session.collation_database=46"},
		{"character_set_collations", func(s *SessionState) {
			s.CharacterSetCollations, s.HasCharacterSetCollations = []CharsetCollation{{45, 224}, {33, 192}}, true
		}, "SET @@session.character_set_collations=_utf8mb4'utf8mb4=utf8mb4_unicode_ci,utf8mb3=utf8mb3_unicode_ci'"},
		{"character_set_collations_unknown", func(s *SessionState) {
			s.CharacterSetCollations, s.HasCharacterSetCollations = []CharsetCollation{{45, 2347}}, true
		}, "SET @@session.character_set_collations=(SELECT GROUP_CONCAT(CONCAT(f.CHARACTER_SET_NAME,_utf8mb4'=',t.FULL_COLLATION_NAME))" +
			" FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY f, information_schema.COLLATION_CHARACTER_SET_APPLICABILITY t" +
			" WHERE (f.ID,t.ID) IN ((45,2347)))"},
		{"character_set_collations_empty", func(s *SessionState) {
			s.HasCharacterSetCollations = true
		}, "SET @@session.character_set_collations=_utf8mb4''"},
		{"explicit_defaults_status_var", func(s *SessionState) {
			s.HasExplicitDefaultsForTimestamp = true
		}, "SET @@session.explicit_defaults_for_timestamp=0"},
		{"default_collation_for_utf8mb4", func(s *SessionState) {
			s.DefaultCollationForUTF8MB4, s.HasDefaultCollationForUTF8MB4 = 255, true
		}, "SET @@session.default_collation_for_utf8mb4=255"},
		{"sql_require_primary_key", func(s *SessionState) {
			s.SQLRequirePrimaryKey, s.HasSQLRequirePrimaryKey = true, true
		}, "SET @@session.sql_require_primary_key=1"},
		{"default_table_encryption", func(s *SessionState) {
			s.DefaultTableEncryption, s.HasDefaultTableEncryption = true, true
		}, "SET @@session.default_table_encryption=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := fullSessionState()
			s := fullSessionState()
			tc.change(&s)
			got := s.Statements(&prev)
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("got %q, want [%q]", got, tc.want)
			}
		})
	}
}

func TestStatementsCharacterSetCollations(t *testing.T) {
	prev := SessionState{CharacterSetCollations: []CharsetCollation{{45, 224}}, HasCharacterSetCollations: true}
	s := prev
	if got := s.Statements(&prev); len(got) != 0 {
		t.Fatalf("unchanged: %q", got)
	}
	s.CharacterSetCollations = []CharsetCollation{{45, 46}}
	if got := s.Statements(&prev); !reflect.DeepEqual(got, []string{"SET @@session.character_set_collations=_utf8mb4'utf8mb4=utf8mb4_bin'"}) {
		t.Fatalf("changed: %q", got)
	}
	s.CharacterSetCollations = nil
	if got := s.Statements(&prev); !reflect.DeepEqual(got, []string{"SET @@session.character_set_collations=_utf8mb4''"}) {
		t.Fatalf("emptied: %q", got)
	}
}

// SET NAMES cs COLLATE <not the default> logs the collation's id as
// character_set_client, which the server refuses as a number (1115).
func TestStatementsCharacterSetClientIsACollation(t *testing.T) {
	tests := []struct {
		client uint16
		want   []string
	}{
		{31, []string{"SET @@session.character_set_client=latin1, @@session.collation_connection=31, @@session.collation_server=8"}},
		{224, []string{"SET @@session.character_set_client=utf8mb4, @@session.collation_connection=31, @@session.collation_server=8"}},
		{2347, []string{
			"SET @@session.collation_connection=2347",
			"SET @@session.character_set_client=@@session.character_set_connection, @@session.collation_connection=31, @@session.collation_server=8",
		}},
	}
	for _, tc := range tests {
		s := SessionState{CharsetClient: tc.client, CollationConnection: 31, CollationServer: 8, HasCharset: true}
		if got := s.Statements(nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("character_set_client %d: got %q, want %q", tc.client, got, tc.want)
		}
	}
}

// quotedLiteral matches a string literal with the character set introducer
// before it, if any.
var quotedLiteral = regexp.MustCompile(`(_\w+)? ?X?'[^']*'`)

// Every string literal in the SET statements carries its character set: a
// previous statement (or transaction) may have left utf16, ucs2 or utf32 as
// the session's character_set_connection, in which a bare '+03:00' is no
// time zone (1298).
func TestStatementsLiteralsNameTheirCharacterSet(t *testing.T) {
	s := fullSessionState()
	s.CollationConnection = 54 // utf16_general_ci
	s.TimeZone = "+03:00"
	statements := s.Statements(nil)
	s.TimeZone = "Amérique/Zoé"
	s.CharacterSetCollations, s.HasCharacterSetCollations = []CharsetCollation{{45, 224}}, true
	statements = append(statements, s.Statements(nil)...)
	s.CharacterSetCollations = []CharsetCollation{{45, 2347}}
	statements = append(statements, s.Statements(nil)...)
	statements = append(statements,
		UserVar{Name: "a", Type: UserVarString, Charset: 8, Value: []byte("x")}.Statement(),
		UserVar{Name: "b", Type: UserVarString, Charset: 54, Value: []byte{0, 'x'}}.Statement())
	literals := 0
	for _, stmt := range statements {
		for _, m := range quotedLiteral.FindAllStringSubmatch(stmt, -1) {
			literals++
			if m[1] == "" {
				t.Errorf("%s in %q has no character set", m[0], stmt)
			}
		}
	}
	if literals < 6 {
		t.Fatalf("only %d literals in %q", literals, statements)
	}
}

func TestCollationByID(t *testing.T) {
	if cs, coll, ok := CollationByID(255); !ok || cs != "utf8mb4" || coll != "utf8mb4_0900_ai_ci" {
		t.Fatalf("255: %s %s %v", cs, coll, ok)
	}
	if _, _, ok := CollationByID(245); ok {
		t.Fatal("245 differs between MySQL and MariaDB and must be unknown")
	}
}

func TestStatementsFlags2Rules(t *testing.T) {
	s := fullSessionState()
	s.Flags2 = Flags2NoCheckConstraintChecks
	s.Flags2Mask = DefaultFlags2Mask
	got := s.Statements(nil)[2]
	want := "SET @@session.foreign_key_checks=1, @@session.sql_auto_is_null=0, @@session.unique_checks=1, @@session.autocommit=1, @@session.check_constraint_checks=0"
	if got != want {
		t.Fatalf("unknown prev: got %q, want %q", got, want)
	}

	prev := s
	s.Flags2 = 0
	if got := s.Statements(&prev); !reflect.DeepEqual(got, []string{"SET @@session.check_constraint_checks=1"}) {
		t.Fatalf("restoring a MariaDB-only default: %q", got)
	}

	s.Flags2Mask &^= Flags2NotAutocommit
	prev.Flags2, prev.Flags2Mask = Flags2NotAutocommit, DefaultFlags2Mask
	if got := s.Statements(&prev); len(got) != 0 {
		t.Fatalf("masked bit emitted: %q", got)
	}
}

func TestFlags2WrittenBy(t *testing.T) {
	base := flags2Classic | Flags2InsertHistory | Flags2NoCheckConstraintChecks
	tests := []struct {
		version string
		want    uint32
	}{
		{"", base},
		{"8.0.36", base},
		{"8.4.0-log", base},
		{"10.4.30-MariaDB", base},
		{"10.5.1-MariaDB", base},
		{"10.5.2-MariaDB", base | Flags2IfExists},
		{"10.5.16-MariaDB-log", base | Flags2IfExists},
		{"10.5.17-MariaDB-log", base | Flags2IfExists | Flags2ExplicitDefaultsForTimestamp},
		{"10.6.8-MariaDB", base | Flags2IfExists},
		{"10.6.9-MariaDB", base | Flags2IfExists | Flags2ExplicitDefaultsForTimestamp},
		{"10.9.2-MariaDB", base | Flags2IfExists | Flags2ExplicitDefaultsForTimestamp},
		{"10.11.19-MariaDB-0+deb12u1-log", base | Flags2IfExists | Flags2ExplicitDefaultsForTimestamp},
		{"11.4.2-MariaDB", base | Flags2IfExists | Flags2ExplicitDefaultsForTimestamp},
		{"5.5.5-10.11.2-maria-x", base},
	}
	for _, tc := range tests {
		if got := Flags2WrittenBy(tc.version); got != tc.want {
			t.Errorf("Flags2WrittenBy(%q) = %#x, want %#x", tc.version, got, tc.want)
		}
	}
}

func TestIntVar(t *testing.T) {
	iv, err := DecodeIntVar(joinBytes([]byte{IntVarInsertID}, littleEndian64(5)))
	if err != nil || iv.Statement() != "SET INSERT_ID=5" {
		t.Fatalf("insert id: %+v %v", iv, err)
	}
	iv, err = DecodeIntVar(joinBytes([]byte{IntVarLastInsertID}, littleEndian64(math.MaxUint64)))
	if err != nil || iv.Statement() != "SET LAST_INSERT_ID=18446744073709551615" {
		t.Fatalf("last insert id: %+v %v", iv, err)
	}
	if _, err := DecodeIntVar(joinBytes([]byte{0}, littleEndian64(1))); err == nil {
		t.Fatal("kind 0 accepted")
	}
	if _, err := DecodeIntVar([]byte{IntVarInsertID, 1, 2}); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated: %v", err)
	}
	if (IntVar{Kind: 7}).Statement() != "" {
		t.Fatal("statement for unknown kind")
	}
}

func TestRand(t *testing.T) {
	r, err := DecodeRand(hexBytes(t, "690d331900000000dda0252a00000000"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Statement(); got != "SET @@RAND_SEED1=422776169, @@RAND_SEED2=707109085" {
		t.Fatalf("got %q", got)
	}
	if _, err := DecodeRand(make([]byte, 15)); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated: %v", err)
	}
}

// userVarEvent encodes a USER_VAR_EVENT body; tail is appended after the value.
func userVarEvent(name string, typ byte, charset uint32, value []byte, tail ...byte) []byte {
	b := joinBytes(littleEndian32(uint32(len(name))), []byte(name), []byte{0, typ}, littleEndian32(charset), littleEndian32(uint32(len(value))), value)
	return append(b, tail...)
}

func nullUserVarEvent(name string) []byte {
	return joinBytes(littleEndian32(uint32(len(name))), []byte(name), []byte{1})
}

func TestDecodeUserVar(t *testing.T) {
	quoted := "O'Brien – ü😀\\"
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"null", nullUserVarEvent("z"), "SET @`z`:=NULL"},
		{"utf8mb4", userVarEvent("q", UserVarString, 224, []byte(quoted)),
			"SET @`q`:=_utf8mb4 X'" + hex.EncodeToString([]byte(quoted)) + "' COLLATE `utf8mb4_unicode_ci`"},
		{"utf8mb3_mariadb", hexBytes(t, "0100000073000021000000070000006974277320c3a9"),
			"SET @`s`:=_utf8mb3 X'6974277320c3a9' COLLATE `utf8mb3_general_ci`"},
		{"empty_string", userVarEvent("e", UserVarString, 45, nil), "SET @`e`:=_utf8mb4 X'' COLLATE `utf8mb4_general_ci`"},
		{"binary", userVarEvent("f", UserVarString, 63, []byte{0, 0xff}), "SET @`f`:=_binary X'00ff' COLLATE `binary`"},
		{"unknown_collation", userVarEvent("u", UserVarString, 2347, []byte("a")), "SET @`u`:=_binary X'61'"},
		{"backtick_name", userVarEvent("a`b", UserVarString, 63, []byte("x")), "SET @`a``b`:=_binary X'78' COLLATE `binary`"},
		{"real", userVarEvent("r", UserVarReal, 8, littleEndian64(math.Float64bits(1.5))), "SET @`r`:=1.5e+00"},
		{"real_integral", userVarEvent("r", UserVarReal, 8, littleEndian64(math.Float64bits(-3))), "SET @`r`:=-3e+00"},
		{"real_roundtrip", userVarEvent("r", UserVarReal, 8, littleEndian64(math.Float64bits(0.30000000000000004))), "SET @`r`:=3.0000000000000004e-01"},
		{"int_signed", userVarEvent("i", UserVarInt, 8, littleEndian64(uint64(1<<64-7)), 0), "SET @`i`:=-7"},
		{"int_old_format", userVarEvent("i", UserVarInt, 8, littleEndian64(uint64(1<<64-7))), "SET @`i`:=-7"},
		{"int_unsigned", userVarEvent("u", UserVarInt, 8, littleEndian64(math.MaxUint64), 1), "SET @`u`:=18446744073709551615"},
		{"int_chunks", userVarEvent("u", UserVarInt, 8, littleEndian64(math.MaxUint64), 1, 2, 5, 'i', 'n', 'e', 't', '6', 0), "SET @`u`:=-1"},
		{"decimal", userVarEvent("n", UserVarDecimal, 8, hexBytes(t, "05038c0159")), "SET @`n`:=CAST(12.345 AS DECIMAL(5,3))"},
		{"decimal_negative", userVarEvent("n", UserVarDecimal, 8, hexBytes(t, "050373fea6")), "SET @`n`:=CAST(-12.345 AS DECIMAL(5,3))"},
		{"decimal_integral", userVarEvent("n", UserVarDecimal, 8, hexBytes(t, "090080000005")), "SET @`n`:=CAST(5 AS DECIMAL(9,0))"},
		{"decimal_negative_integral", userVarEvent("n", UserVarDecimal, 8, hexBytes(t, "09007ffffff8")), "SET @`n`:=CAST(-7 AS DECIMAL(9,0))"},
		{"decimal_fraction", userVarEvent("n", UserVarDecimal, 8, hexBytes(t, "0403800001")), "SET @`n`:=CAST(0.001 AS DECIMAL(4,3))"},
		{"decimal_negative_fraction", userVarEvent("n", UserVarDecimal, 8, hexBytes(t, "02017ffa")), "SET @`n`:=CAST(-0.5 AS DECIMAL(2,1))"},
		{"decimal_words", userVarEvent("n", UserVarDecimal, 8, hexBytes(t, "2a0c807b1b3a0c14149aa4350dfb38d2075bcd15000c")),
			"SET @`n`:=CAST(123456789012345678901234567890.123456789012 AS DECIMAL(42,12))"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeUserVar(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Statement(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			for n := range len(tc.body) {
				DecodeUserVar(tc.body[:n])
			}
		})
	}
}

func TestDecodeUserVarFields(t *testing.T) {
	v, err := DecodeUserVar(userVarEvent("u", UserVarInt, 8, littleEndian64(1), 1, 2, 5, 'i', 'n', 'e', 't', '6'))
	if err != nil {
		t.Fatal(err)
	}
	want := UserVar{Name: "u", Type: UserVarInt, Charset: 8, Value: littleEndian64(1), Unsigned: true, DataTypeName: "inet6"}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %+v", v)
	}
	v, err = DecodeUserVar(nullUserVarEvent("z"))
	if err != nil || !v.IsNull || v.Charset != 63 {
		t.Fatalf("null: %+v %v", v, err)
	}
}

func TestDecodeUserVarErrors(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"empty_name", nullUserVarEvent(""), "empty name"},
		{"name_truncated", joinBytes(littleEndian32(10), []byte("abc")), "truncated"},
		{"no_null_flag", joinBytes(littleEndian32(1), []byte("a")), "truncated"},
		{"header_truncated", joinBytes(littleEndian32(1), []byte("a"), []byte{0, 2, 8}), "truncated"},
		{"value_truncated", joinBytes(littleEndian32(1), []byte("a"), []byte{0, 0}, littleEndian32(8), littleEndian32(5), []byte("ab")), "truncated"},
		{"huge_value_length", joinBytes(littleEndian32(1), []byte("a"), []byte{0, 0}, littleEndian32(8), littleEndian32(math.MaxUint32)), "truncated"},
		{"huge_name_length", joinBytes(littleEndian32(math.MaxUint32), []byte("a")), "truncated"},
		{"row_type", userVarEvent("a", 3, 8, nil), "unknown value type 3"},
		{"real_length", userVarEvent("a", UserVarReal, 8, []byte{1, 2, 3, 4}), "real value of 4 bytes"},
		{"real_nan", userVarEvent("a", UserVarReal, 8, littleEndian64(math.Float64bits(math.NaN()))), "no SQL literal"},
		{"int_length", userVarEvent("a", UserVarInt, 8, []byte{1}), "integer value of 1 bytes"},
		{"decimal_short", userVarEvent("a", UserVarDecimal, 8, []byte{5}), "decimal value of 1 bytes"},
		{"decimal_scale", userVarEvent("a", UserVarDecimal, 8, []byte{2, 3, 0x80, 0, 0}), "out of range"},
		{"decimal_precision", userVarEvent("a", UserVarDecimal, 8, []byte{66, 0}), "out of range"},
		{"decimal_size", userVarEvent("a", UserVarDecimal, 8, hexBytes(t, "05038c01")), "needs 3 bytes"},
		{"decimal_digits", userVarEvent("a", UserVarDecimal, 8, hexBytes(t, "0900bb9aca00")), "exceeds 9 digits"},
		{"data_type_name_truncated", userVarEvent("a", UserVarInt, 8, littleEndian64(1), 2, 9, 'x'), "data type name truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeUserVar(tc.body)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if (UserVar{Name: "a", Type: 3}).Statement() != "" {
		t.Fatal("statement for an invalid value")
	}
}

func FuzzDecodeQueryStatusVars(f *testing.F) {
	for _, tc := range singleStatusVars {
		f.Add(tc.raw)
	}
	f.Add(hexBytes(f, "000040000d010000205400000000060373746403030002000421002100080005062b30313a303007040080a02c02"))
	prev := fullSessionState()
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, _ := DecodeQueryStatusVars(raw)
		s.Statements(nil)
		s.Statements(&prev)
		prev.Statements(&s)
	})
}

func FuzzDecodeUserVar(f *testing.F) {
	f.Add(nullUserVarEvent("z"))
	f.Add(userVarEvent("q", UserVarString, 224, []byte("O'Brien – ü😀")))
	f.Add(userVarEvent("r", UserVarReal, 8, littleEndian64(math.Float64bits(1.5))))
	f.Add(userVarEvent("u", UserVarInt, 8, littleEndian64(math.MaxUint64), 1, 2, 1, 'x'))
	f.Add(userVarEvent("n", UserVarDecimal, 8, hexBytes(f, "2a0c807b1b3a0c14149aa4350dfb38d2075bcd15000c")))
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := DecodeUserVar(body)
		if err == nil && v.Statement() == "" {
			t.Fatalf("decoded %+v has no statement", v)
		}
	})
}

// Session state of statement events: decoding of QUERY_EVENT status
// variables and of the INTVAR, RAND and USER_VAR events that precede a query,
// and the SET statements that reproduce that state on a target session.
package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/sqltext"
)

// Query status variable codes (MySQL below 128, MariaDB from 128).
const (
	StatusFlags2                       = 0
	StatusSQLMode                      = 1
	StatusCatalog                      = 2
	StatusAutoIncrement                = 3
	StatusCharset                      = 4
	StatusTimeZone                     = 5
	StatusCatalogNZ                    = 6
	StatusLCTimeNames                  = 7
	StatusCharsetDatabase              = 8
	StatusTableMapForUpdate            = 9
	StatusMasterDataWritten            = 10
	StatusInvoker                      = 11
	StatusUpdatedDBNames               = 12
	StatusMicroseconds                 = 13
	StatusExplicitDefaultsForTimestamp = 16
	StatusDDLLoggedWithXID             = 17
	StatusDefaultCollationForUTF8MB4   = 18
	StatusSQLRequirePrimaryKey         = 19
	StatusDefaultTableEncryption       = 20
	StatusHRNow                        = 128
	StatusXID                          = 129
	StatusGTIDFlags3                   = 130
	StatusCharacterSetCollations       = 131
	StatusDummy                        = 255
)

// Bits of the Q_FLAGS2 status variable (the source's thd->variables.option_bits).
const (
	Flags2AutoIsNull                   uint32 = 1 << 14
	Flags2NoCheckConstraintChecks      uint32 = 1 << 15
	Flags2NotAutocommit                uint32 = 1 << 19
	Flags2ExplicitDefaultsForTimestamp uint32 = 1 << 24
	Flags2NoForeignKeyChecks           uint32 = 1 << 26
	Flags2RelaxedUniqueChecks          uint32 = 1 << 27
	Flags2IfExists                     uint32 = 1 << 28
	Flags2InsertHistory                uint32 = 1 << 30
)

// flags2Classic are the bits every MySQL 5.0+ and MariaDB source writes.
const flags2Classic = Flags2AutoIsNull | Flags2NotAutocommit | Flags2NoForeignKeyChecks | Flags2RelaxedUniqueChecks

// DefaultFlags2Mask is the Flags2Mask of a freshly decoded state: every bit a
// source can write except Flags2ExplicitDefaultsForTimestamp, whose zero only
// means OFF on MariaDB sources recent enough to write it (see Flags2WrittenBy).
const DefaultFlags2Mask = flags2Classic | Flags2NoCheckConstraintChecks | Flags2IfExists | Flags2InsertHistory

// Gtid flags3 bits that carry an 8-byte start-alter sequence number.
const (
	gtidFlags3CommitAlter   = 4
	gtidFlags3RollbackAlter = 8
)

// maxDBsInEventMTS is MySQL's MAX_DBS_IN_EVENT_MTS: a larger Q_UPDATED_DB_NAMES
// count (MySQL writes 254) means "too many", and no names follow.
const maxDBsInEventMTS = 16

// ErrUnknownStatusVar is wrapped by DecodeQueryStatusVars when it meets a code
// whose length it does not know; nothing after that code can be decoded.
var ErrUnknownStatusVar = errors.New("unknown query status variable")

// CharsetCollation is one entry of MariaDB's @@character_set_collations: the
// default collation To chosen for the character set whose primary collation
// is From.
type CharsetCollation struct {
	From, To uint16
}

// SessionState is the part of a source session that a statement depends on.
// Has* fields say whether a value is known; values the source omits because
// they are at their default (auto-increment 1/1, lc_time_names en_US,
// collation_database of the current database) are filled in by the decoder.
type SessionState struct {
	Seconds      int64
	Micros       uint32
	HasTimestamp bool

	PseudoThreadID    uint32
	HasPseudoThreadID bool

	Flags2 uint32
	// Flags2Mask selects the Flags2 bits that are meaningful for the source
	// and are to be reproduced.
	Flags2Mask uint32
	HasFlags2  bool

	SQLMode    uint64
	HasSQLMode bool

	AutoIncrementIncrement, AutoIncrementOffset uint16
	HasAutoIncrement                            bool

	CharsetClient, CollationConnection, CollationServer uint16
	HasCharset                                          bool

	TimeZone    string
	HasTimeZone bool

	LCTimeNames    uint16
	HasLCTimeNames bool

	// CollationDatabase 0 means the default collation of the current database.
	CollationDatabase    uint16
	HasCollationDatabase bool

	CharacterSetCollations    []CharsetCollation
	HasCharacterSetCollations bool

	ExplicitDefaultsForTimestamp    bool
	HasExplicitDefaultsForTimestamp bool

	DefaultCollationForUTF8MB4    uint16
	HasDefaultCollationForUTF8MB4 bool

	SQLRequirePrimaryKey    bool
	HasSQLRequirePrimaryKey bool

	DefaultTableEncryption    bool
	HasDefaultTableEncryption bool

	// Decoded for the caller, never turned into statements.
	Catalog                  string
	InvokerUser, InvokerHost string
	HasInvoker               bool
	UpdatedDBNames           []string
	UpdatedDBNamesOverflow   bool
	HasUpdatedDBNames        bool
	TableMapForUpdate        uint64
	MasterDataWritten        uint32
	XID                      uint64
	HasXID                   bool
	GTIDFlags3               uint8
	StartAlterSeqNo          uint64
}

type statusReader struct {
	raw  []byte
	pos  int
	code byte
}

func (r *statusReader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.raw)-r.pos {
		return nil, fmt.Errorf("binlog: query status var %d: truncated at byte %d", r.code, r.pos)
	}
	b := r.raw[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

func (r *statusReader) uint8() (uint8, error) {
	b, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (r *statusReader) uint16() (uint16, error) {
	b, err := r.take(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (r *statusReader) uint24() (uint32, error) {
	b, err := r.take(3)
	if err != nil {
		return 0, err
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16, nil
}

func (r *statusReader) uint32() (uint32, error) {
	b, err := r.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *statusReader) uint64() (uint64, error) {
	b, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *statusReader) lengthPrefixed() (string, error) {
	n, err := r.uint8()
	if err != nil {
		return "", err
	}
	b, err := r.take(int(n))
	return string(b), err
}

func (r *statusReader) nulTerminated() (string, error) {
	for i := r.pos; i < len(r.raw); i++ {
		if r.raw[i] == 0 {
			s := string(r.raw[r.pos:i])
			r.pos = i + 1
			return s, nil
		}
	}
	return "", fmt.Errorf("binlog: query status var %d: truncated at byte %d", r.code, len(r.raw))
}

// DecodeQueryStatusVars decodes the status variable block of a QUERY_EVENT.
// On error the state decoded before the failing variable is returned with it.
func DecodeQueryStatusVars(raw []byte) (SessionState, error) {
	s := SessionState{
		Flags2Mask:             DefaultFlags2Mask,
		AutoIncrementIncrement: 1,
		AutoIncrementOffset:    1,
		HasAutoIncrement:       true,
		HasLCTimeNames:         true,
		HasCollationDatabase:   true,
	}
	r := &statusReader{raw: raw}
	for r.pos < len(raw) {
		start := r.pos
		r.code = raw[r.pos]
		r.pos++
		if err := s.decodeStatusVar(r); err != nil {
			if errors.Is(err, ErrUnknownStatusVar) {
				return s, fmt.Errorf("binlog: query status var %d at byte %d: %w", r.code, start, err)
			}
			return s, err
		}
		if r.code == StatusDummy {
			break
		}
	}
	return s, nil
}

func (s *SessionState) decodeStatusVar(r *statusReader) error {
	var err error
	switch r.code {
	case StatusFlags2:
		if s.Flags2, err = r.uint32(); err == nil {
			s.HasFlags2 = true
		}
	case StatusSQLMode:
		if s.SQLMode, err = r.uint64(); err == nil {
			s.HasSQLMode = true
		}
	case StatusCatalog:
		err = s.decodeCatalog(r)
	case StatusCatalogNZ:
		s.Catalog, err = r.lengthPrefixed()
	case StatusAutoIncrement:
		err = s.decodeAutoIncrement(r)
	case StatusCharset:
		err = s.decodeCharset(r)
	case StatusTimeZone:
		if s.TimeZone, err = r.lengthPrefixed(); err == nil {
			s.HasTimeZone = true
		}
	case StatusLCTimeNames:
		s.LCTimeNames, err = r.uint16()
	case StatusCharsetDatabase:
		s.CollationDatabase, err = r.uint16()
	case StatusTableMapForUpdate:
		s.TableMapForUpdate, err = r.uint64()
	case StatusMasterDataWritten:
		s.MasterDataWritten, err = r.uint32()
	case StatusInvoker:
		if s.InvokerUser, err = r.lengthPrefixed(); err != nil {
			return err
		}
		if s.InvokerHost, err = r.lengthPrefixed(); err == nil {
			s.HasInvoker = true
		}
	case StatusUpdatedDBNames:
		err = s.decodeUpdatedDBNames(r)
	case StatusMicroseconds, StatusHRNow:
		err = s.decodeMicros(r)
	case StatusExplicitDefaultsForTimestamp:
		var v uint8
		if v, err = r.uint8(); err == nil {
			s.ExplicitDefaultsForTimestamp, s.HasExplicitDefaultsForTimestamp = v != 0, true
		}
	case StatusDDLLoggedWithXID, StatusXID:
		if s.XID, err = r.uint64(); err == nil {
			s.HasXID = true
		}
	case StatusDefaultCollationForUTF8MB4:
		if s.DefaultCollationForUTF8MB4, err = r.uint16(); err == nil {
			s.HasDefaultCollationForUTF8MB4 = true
		}
	case StatusSQLRequirePrimaryKey:
		var v uint8
		if v, err = r.uint8(); err == nil {
			s.SQLRequirePrimaryKey, s.HasSQLRequirePrimaryKey = v != 0, true
		}
	case StatusDefaultTableEncryption:
		var v uint8
		if v, err = r.uint8(); err == nil {
			s.DefaultTableEncryption, s.HasDefaultTableEncryption = v != 0, true
		}
	case StatusGTIDFlags3:
		if s.GTIDFlags3, err = r.uint8(); err != nil {
			return err
		}
		if s.GTIDFlags3&(gtidFlags3CommitAlter|gtidFlags3RollbackAlter) != 0 {
			s.StartAlterSeqNo, err = r.uint64()
		}
	case StatusCharacterSetCollations:
		err = s.decodeCharacterSetCollations(r)
	case StatusDummy:
	default:
		return ErrUnknownStatusVar
	}
	return err
}

// decodeCatalog reads the catalog as servers before MySQL 5.0.4 wrote it:
// a length, then the name and a NUL.
func (s *SessionState) decodeCatalog(r *statusReader) error {
	n, err := r.uint8()
	if err != nil {
		return err
	}
	b, err := r.take(int(n) + 1)
	if err != nil {
		return err
	}
	s.Catalog = string(b[:n])
	return nil
}

func (s *SessionState) decodeAutoIncrement(r *statusReader) error {
	inc, err := r.uint16()
	if err != nil {
		return err
	}
	off, err := r.uint16()
	if err != nil {
		return err
	}
	s.AutoIncrementIncrement, s.AutoIncrementOffset = inc, off
	return nil
}

// decodeCharset reads character_set_client, collation_connection and
// collation_server, two bytes each.
func (s *SessionState) decodeCharset(r *statusReader) error {
	b, err := r.take(6)
	if err != nil {
		return err
	}
	s.CharsetClient = binary.LittleEndian.Uint16(b)
	s.CollationConnection = binary.LittleEndian.Uint16(b[2:])
	s.CollationServer = binary.LittleEndian.Uint16(b[4:])
	s.HasCharset = true
	return nil
}

// decodeUpdatedDBNames reads the databases a statement changed: a count,
// then as many NUL-terminated names, or none when the count says more
// than maxDBsInEventMTS (the source did not list them).
func (s *SessionState) decodeUpdatedDBNames(r *statusReader) error {
	n, err := r.uint8()
	if err != nil {
		return err
	}
	s.HasUpdatedDBNames = true
	s.UpdatedDBNames = nil
	if n > maxDBsInEventMTS {
		s.UpdatedDBNamesOverflow = true
		return nil
	}
	for range n {
		name, err := r.nulTerminated()
		if err != nil {
			return err
		}
		s.UpdatedDBNames = append(s.UpdatedDBNames, name)
	}
	return nil
}

// decodeMicros reads the microseconds of the statement's start, three
// bytes.
func (s *SessionState) decodeMicros(r *statusReader) error {
	us, err := r.uint24()
	if err != nil {
		return err
	}
	if us > 999999 {
		return fmt.Errorf("binlog: query status var %d: microseconds %d out of range", r.code, us)
	}
	s.Micros = us
	return nil
}

// decodeCharacterSetCollations reads MariaDB's
// @@character_set_collations: a count, then pairs of collation ids.
func (s *SessionState) decodeCharacterSetCollations(r *statusReader) error {
	n, err := r.uint8()
	if err != nil {
		return err
	}
	b, err := r.take(4 * int(n))
	if err != nil {
		return err
	}
	s.CharacterSetCollations = make([]CharsetCollation, n)
	for i := range s.CharacterSetCollations {
		s.CharacterSetCollations[i] = CharsetCollation{
			From: binary.LittleEndian.Uint16(b[4*i:]),
			To:   binary.LittleEndian.Uint16(b[4*i+2:]),
		}
	}
	s.HasCharacterSetCollations = true
	return nil
}

// QuerySessionState decodes the session state of a QUERY_EVENT: its status
// variables, the header timestamp and the source thread id.
func QuerySessionState(header *replication.EventHeader, ev *replication.QueryEvent) (SessionState, error) {
	if header == nil || ev == nil {
		return SessionState{}, errors.New("binlog: query session state: missing event or header")
	}
	s, err := DecodeQueryStatusVars(ev.StatusVars)
	s.Seconds, s.HasTimestamp = int64(header.Timestamp), true
	s.PseudoThreadID, s.HasPseudoThreadID = ev.SlaveProxyID, true
	return s, err
}

// Flags2WrittenBy returns the Flags2 bits that a source of the given version
// (the FORMAT_DESCRIPTION_EVENT server version) writes meaningfully.
func Flags2WrittenBy(serverVersion string) uint32 {
	mask := flags2Classic | Flags2InsertHistory | Flags2NoCheckConstraintChecks
	v, rest, ok := splitServerVersion(serverVersion)
	if !ok || !(strings.Contains(rest, "MariaDB") || strings.Contains(rest, "-maria-")) || versionLess(v, [3]int{10, 5, 2}) {
		return mask
	}
	mask |= Flags2IfExists
	explicitSince := [10]int{99, 99, 99, 99, 99, 17, 9, 5, 4, 2}
	if v[0] == 10 && v[1] < 10 && v[2] < explicitSince[v[1]] {
		return mask
	}
	return mask | Flags2ExplicitDefaultsForTimestamp
}

func splitServerVersion(s string) (v [3]int, rest string, ok bool) {
	for i := range 3 {
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[:j])
		if err != nil || n > 255 || (i == 0 && (j == len(s) || s[j] != '.')) {
			return v, "", false
		}
		v[i] = n
		s = s[j:]
		if i < 2 && strings.HasPrefix(s, ".") {
			s = s[1:]
		}
	}
	return v, s, true
}

func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

type flags2Option struct {
	bit      uint32
	variable string
	inverted bool
	// mariaDBOnly variables are not set to their default on a session of
	// unknown state, so that MySQL targets are not sent them.
	mariaDBOnly bool
}

var flags2Options = []flags2Option{
	{Flags2NoForeignKeyChecks, "foreign_key_checks", true, false},
	{Flags2AutoIsNull, "sql_auto_is_null", false, false},
	{Flags2RelaxedUniqueChecks, "unique_checks", true, false},
	{Flags2NotAutocommit, "autocommit", true, false},
	{Flags2NoCheckConstraintChecks, "check_constraint_checks", true, true},
	{Flags2IfExists, "sql_if_exists", false, true},
	{Flags2ExplicitDefaultsForTimestamp, "explicit_defaults_for_timestamp", false, false},
	{Flags2InsertHistory, "system_versioning_insert_history", false, true},
}

// Statements returns the SET statements that bring a target session from
// prev to s. prev == nil means the target session's state is unknown: every
// value s knows is set, except MariaDB-only flags at their default. The
// statements must run after the USE of the statement's database, which resets
// collation_database.
func (s SessionState) Statements(prev *SessionState) []string {
	var out []string
	if s.HasTimestamp && (prev == nil || !prev.HasTimestamp || prev.Seconds != s.Seconds || prev.Micros != s.Micros) {
		if s.Micros != 0 {
			out = append(out, fmt.Sprintf("SET TIMESTAMP=%d.%06d", s.Seconds, s.Micros))
		} else {
			out = append(out, fmt.Sprintf("SET TIMESTAMP=%d", s.Seconds))
		}
	}
	if s.HasPseudoThreadID && (prev == nil || !prev.HasPseudoThreadID || prev.PseudoThreadID != s.PseudoThreadID) {
		out = append(out, fmt.Sprintf("SET @@session.pseudo_thread_id=%d", s.PseudoThreadID))
	}
	if s.HasFlags2 {
		if st := s.flags2Statement(prev); st != "" {
			out = append(out, st)
		}
	}
	if s.HasSQLMode && (prev == nil || !prev.HasSQLMode || prev.SQLMode != s.SQLMode) {
		out = append(out, fmt.Sprintf("SET @@session.sql_mode=%d", s.SQLMode))
	}
	if s.HasAutoIncrement && (prev == nil || !prev.HasAutoIncrement ||
		prev.AutoIncrementIncrement != s.AutoIncrementIncrement || prev.AutoIncrementOffset != s.AutoIncrementOffset) {
		out = append(out, fmt.Sprintf("SET @@session.auto_increment_increment=%d, @@session.auto_increment_offset=%d",
			s.AutoIncrementIncrement, s.AutoIncrementOffset))
	}
	if s.HasCharset && (prev == nil || !prev.HasCharset || prev.CharsetClient != s.CharsetClient ||
		prev.CollationConnection != s.CollationConnection || prev.CollationServer != s.CollationServer) {
		out = append(out, s.charsetStatements()...)
	}
	if s.HasTimeZone && (prev == nil || !prev.HasTimeZone || prev.TimeZone != s.TimeZone) {
		out = append(out, "SET @@session.time_zone="+sqltext.Literal(s.TimeZone))
	}
	if s.HasLCTimeNames && (prev == nil || !prev.HasLCTimeNames || prev.LCTimeNames != s.LCTimeNames) {
		out = append(out, fmt.Sprintf("SET @@session.lc_time_names=%d", s.LCTimeNames))
	}
	if s.HasCollationDatabase && (prev == nil || !prev.HasCollationDatabase || prev.CollationDatabase != s.CollationDatabase) {
		if s.CollationDatabase == 0 {
			out = append(out, "SET @@session.collation_database=DEFAULT")
		} else {
			out = append(out, fmt.Sprintf("SET @@session.collation_database=%d", s.CollationDatabase))
		}
	}
	if s.HasCharacterSetCollations && (prev == nil || !prev.HasCharacterSetCollations ||
		!equalCharsetCollations(prev.CharacterSetCollations, s.CharacterSetCollations)) {
		out = append(out, characterSetCollationsStatement(s.CharacterSetCollations))
	}
	if s.HasExplicitDefaultsForTimestamp && (prev == nil || !prev.HasExplicitDefaultsForTimestamp ||
		prev.ExplicitDefaultsForTimestamp != s.ExplicitDefaultsForTimestamp) {
		out = append(out, fmt.Sprintf("SET @@session.explicit_defaults_for_timestamp=%d", boolDigit(s.ExplicitDefaultsForTimestamp)))
	}
	if s.HasDefaultCollationForUTF8MB4 && (prev == nil || !prev.HasDefaultCollationForUTF8MB4 ||
		prev.DefaultCollationForUTF8MB4 != s.DefaultCollationForUTF8MB4) {
		out = append(out, fmt.Sprintf("SET @@session.default_collation_for_utf8mb4=%d", s.DefaultCollationForUTF8MB4))
	}
	if s.HasSQLRequirePrimaryKey && (prev == nil || !prev.HasSQLRequirePrimaryKey ||
		prev.SQLRequirePrimaryKey != s.SQLRequirePrimaryKey) {
		out = append(out, fmt.Sprintf("SET @@session.sql_require_primary_key=%d", boolDigit(s.SQLRequirePrimaryKey)))
	}
	if s.HasDefaultTableEncryption && (prev == nil || !prev.HasDefaultTableEncryption ||
		prev.DefaultTableEncryption != s.DefaultTableEncryption) {
		out = append(out, fmt.Sprintf("SET @@session.default_table_encryption=%d", boolDigit(s.DefaultTableEncryption)))
	}
	return out
}

func (s SessionState) flags2Statement(prev *SessionState) string {
	var assignments []string
	for _, o := range flags2Options {
		if s.Flags2Mask&o.bit == 0 {
			continue
		}
		known := prev != nil && prev.HasFlags2 && prev.Flags2Mask&o.bit != 0
		if known && (prev.Flags2^s.Flags2)&o.bit == 0 {
			continue
		}
		set := s.Flags2&o.bit != 0
		if !known && o.mariaDBOnly && !set {
			continue
		}
		assignments = append(assignments, fmt.Sprintf("@@session.%s=%d", o.variable, boolDigit(set != o.inverted)))
	}
	if len(assignments) == 0 {
		return ""
	}
	return "SET " + strings.Join(assignments, ", ")
}

func equalCharsetCollations(a, b []CharsetCollation) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func characterSetCollationsStatement(m []CharsetCollation) string {
	pairs := make([]string, 0, len(m))
	for _, p := range m {
		from, okFrom := collationsByID[uint32(p.From)]
		to, okTo := collationsByID[uint32(p.To)]
		if !okFrom || !okTo {
			return characterSetCollationsLookup(m)
		}
		pairs = append(pairs, from.charset+"="+to.collation)
	}
	return "SET @@session.character_set_collations=" + sqltext.Literal(strings.Join(pairs, ","))
}

func characterSetCollationsLookup(m []CharsetCollation) string {
	ids := make([]string, len(m))
	for i, p := range m {
		ids[i] = fmt.Sprintf("(%d,%d)", p.From, p.To)
	}
	// GROUP_CONCAT's default separator is ','; a SEPARATOR clause takes no
	// character set introducer, and its literal would be read in the
	// connection's character set.
	return "SET @@session.character_set_collations=(SELECT GROUP_CONCAT(CONCAT(f.CHARACTER_SET_NAME," + sqltext.Literal("=") +
		",t.FULL_COLLATION_NAME))" +
		" FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY f, information_schema.COLLATION_CHARACTER_SET_APPLICABILITY t" +
		" WHERE (f.ID,t.ID) IN (" + strings.Join(ids, ",") + "))"
}

func boolDigit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// charsetStatements set character_set_client, collation_connection and
// collation_server. character_set_client takes a character set, and the
// server refuses the id of a collation that is not its character set's
// default (SET NAMES latin1 COLLATE latin1_german2_ci logs 31, refused with
// 1115), so the character set is named. For an id missing from the package's
// table, the target finds the name itself: the id is set as
// collation_connection first, and character_set_client copies the character
// set that implies (a second statement: the assignments of one SET read the
// values from before it).
func (s SessionState) charsetStatements() []string {
	rest := fmt.Sprintf("@@session.collation_connection=%d, @@session.collation_server=%d", s.CollationConnection, s.CollationServer)
	if c, ok := collationsByID[uint32(s.CharsetClient)]; ok {
		return []string{"SET @@session.character_set_client=" + c.charset + ", " + rest}
	}
	return []string{
		fmt.Sprintf("SET @@session.collation_connection=%d", s.CharsetClient),
		"SET @@session.character_set_client=@@session.character_set_connection, " + rest,
	}
}

// backquote quotes an identifier with backticks.
func backquote(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// IntVar kinds.
const (
	IntVarLastInsertID = 1
	IntVarInsertID     = 2
)

// IntVar is an INTVAR_EVENT: the LAST_INSERT_ID() or the next auto-increment
// value that the following statement used on the source.
type IntVar struct {
	Kind  byte
	Value uint64
}

// DecodeIntVar decodes the body of an INTVAR_EVENT (the bytes after the
// common header, without checksum).
func DecodeIntVar(body []byte) (IntVar, error) {
	if len(body) < 9 {
		return IntVar{}, fmt.Errorf("binlog: intvar event: truncated at byte %d", len(body))
	}
	iv := IntVar{Kind: body[0], Value: binary.LittleEndian.Uint64(body[1:])}
	if iv.Kind != IntVarLastInsertID && iv.Kind != IntVarInsertID {
		return IntVar{}, fmt.Errorf("binlog: intvar event: unknown kind %d", iv.Kind)
	}
	return iv, nil
}

// Statement returns the SET statement for the value, or "" for an unknown kind.
func (iv IntVar) Statement() string {
	switch iv.Kind {
	case IntVarLastInsertID:
		return fmt.Sprintf("SET LAST_INSERT_ID=%d", iv.Value)
	case IntVarInsertID:
		return fmt.Sprintf("SET INSERT_ID=%d", iv.Value)
	}
	return ""
}

// RandSeeds is a RAND_EVENT: the random seeds the following statement
// started from on the source.
type RandSeeds struct {
	Seed1, Seed2 uint64
}

// DecodeRand decodes the body of a RAND_EVENT (the bytes after the common
// header, without checksum).
func DecodeRand(body []byte) (RandSeeds, error) {
	if len(body) < 16 {
		return RandSeeds{}, fmt.Errorf("binlog: rand event: truncated at byte %d", len(body))
	}
	return RandSeeds{Seed1: binary.LittleEndian.Uint64(body), Seed2: binary.LittleEndian.Uint64(body[8:])}, nil
}

// Statement returns the SET statement that restores the seeds.
func (r RandSeeds) Statement() string {
	return fmt.Sprintf("SET @@RAND_SEED1=%d, @@RAND_SEED2=%d", r.Seed1, r.Seed2)
}

// User variable value types (the source's Item_result).
const (
	UserVarString  = 0
	UserVarReal    = 1
	UserVarInt     = 2
	UserVarDecimal = 4
)

// Optional attribute chunks that follow a user variable's value.
const (
	userVarChunkSigned       = 0
	userVarChunkUnsigned     = 1
	userVarChunkDataTypeName = 2
)

// UserVar is a USER_VAR_EVENT: a user variable the following statement read.
type UserVar struct {
	Name    string
	IsNull  bool
	Type    byte
	Charset uint32
	// Value is the raw value: the string bytes, an 8-byte little-endian
	// double or integer, or precision, scale and binary decimal.
	Value    []byte
	Unsigned bool
	// DataTypeName is MariaDB's name of a plugin data type (e.g. inet6).
	DataTypeName string
}

// DecodeUserVar decodes the body of a USER_VAR_EVENT (the bytes after the
// common header, without checksum).
func DecodeUserVar(body []byte) (UserVar, error) {
	var v UserVar
	if len(body) < 4 {
		return v, fmt.Errorf("binlog: user var event: truncated at byte %d", len(body))
	}
	nameLen := binary.LittleEndian.Uint32(body)
	if nameLen == 0 {
		return v, errors.New("binlog: user var event: empty name")
	}
	pos := 4
	if uint64(nameLen) >= uint64(len(body)-pos) {
		return v, fmt.Errorf("binlog: user var event: name of %d bytes truncated at byte %d", nameLen, len(body))
	}
	v.Name = string(body[pos : pos+int(nameLen)])
	pos += int(nameLen)
	v.IsNull = body[pos] != 0
	pos++
	if v.IsNull {
		v.Type, v.Charset = UserVarString, 63
		return v, nil
	}
	if len(body)-pos < 9 {
		return v, fmt.Errorf("binlog: user var event %s: truncated at byte %d", v.Name, len(body))
	}
	v.Type = body[pos]
	v.Charset = binary.LittleEndian.Uint32(body[pos+1:])
	valueLen := binary.LittleEndian.Uint32(body[pos+5:])
	pos += 9
	if uint64(valueLen) > uint64(len(body)-pos) {
		return v, fmt.Errorf("binlog: user var event %s: value of %d bytes truncated at byte %d", v.Name, valueLen, len(body))
	}
	v.Value = body[pos : pos+int(valueLen)]
	pos += int(valueLen)
chunks:
	for pos < len(body) {
		switch body[pos] {
		case userVarChunkSigned:
			v.Unsigned = false
			pos++
		case userVarChunkUnsigned:
			v.Unsigned = true
			pos++
		case userVarChunkDataTypeName:
			if pos+1 >= len(body) || int(body[pos+1]) > len(body)-pos-2 {
				return v, fmt.Errorf("binlog: user var event %s: data type name truncated at byte %d", v.Name, len(body))
			}
			v.DataTypeName = string(body[pos+2 : pos+2+int(body[pos+1])])
			pos += 2 + int(body[pos+1])
		default:
			break chunks
		}
	}
	if _, err := v.literal(); err != nil {
		return v, err
	}
	return v, nil
}

// Statement returns the SET statement that gives the variable its source
// value and type, or "" for a value DecodeUserVar would reject. A string in a
// collation missing from the package's table is set as a _binary string.
func (v UserVar) Statement() string {
	lit, err := v.literal()
	if err != nil || v.Name == "" {
		return ""
	}
	return "SET @" + backquote(v.Name) + ":=" + lit
}

func (v UserVar) literal() (string, error) {
	if v.IsNull {
		return "NULL", nil
	}
	switch v.Type {
	case UserVarString:
		if c, ok := collationsByID[v.Charset]; ok {
			return "_" + c.charset + " " + sqltext.Hex(v.Value) + " COLLATE " + backquote(c.collation), nil
		}
		return "_binary " + sqltext.Hex(v.Value), nil
	case UserVarReal:
		if len(v.Value) != 8 {
			return "", fmt.Errorf("binlog: user var %s: real value of %d bytes", v.Name, len(v.Value))
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(v.Value))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("binlog: user var %s: real value %v has no SQL literal", v.Name, f)
		}
		return strconv.FormatFloat(f, 'e', -1, 64), nil
	case UserVarInt:
		if len(v.Value) != 8 {
			return "", fmt.Errorf("binlog: user var %s: integer value of %d bytes", v.Name, len(v.Value))
		}
		n := binary.LittleEndian.Uint64(v.Value)
		if v.Unsigned {
			return strconv.FormatUint(n, 10), nil
		}
		return strconv.FormatInt(int64(n), 10), nil
	case UserVarDecimal:
		if len(v.Value) < 2 {
			return "", fmt.Errorf("binlog: user var %s: decimal value of %d bytes", v.Name, len(v.Value))
		}
		precision, scale := int(v.Value[0]), int(v.Value[1])
		digits, err := decodeBinaryDecimal(v.Value[2:], precision, scale)
		if err != nil {
			return "", fmt.Errorf("binlog: user var %s: %w", v.Name, err)
		}
		return fmt.Sprintf("CAST(%s AS DECIMAL(%d,%d))", digits, max(precision, 1), scale), nil
	}
	return "", fmt.Errorf("binlog: user var %s: unknown value type %d", v.Name, v.Type)
}

var decimalDigitBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

var powersOfTen = [10]uint32{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000}

// decodeBinaryDecimal turns the binary decimal format of DECIMAL(precision,
// scale) (groups of nine digits in big-endian 4-byte words, a shorter group
// first and last, sign in the top bit, negatives inverted) into its text.
func decodeBinaryDecimal(b []byte, precision, scale int) (string, error) {
	if precision > 65 || scale > precision {
		return "", fmt.Errorf("decimal(%d,%d) out of range", precision, scale)
	}
	intg, frac := precision-scale, scale
	intgWords, intgRest := intg/9, intg%9
	fracWords, fracRest := frac/9, frac%9
	size := intgWords*4 + decimalDigitBytes[intgRest] + fracWords*4 + decimalDigitBytes[fracRest]
	if len(b) != size {
		return "", fmt.Errorf("decimal(%d,%d) needs %d bytes, has %d", precision, scale, size, len(b))
	}
	if size == 0 {
		return "0", nil
	}
	negative := b[0]&0x80 == 0
	var mask byte
	if negative {
		mask = 0xff
	}
	pos := 0
	group := func(n, digits int) (string, error) {
		var x uint32
		for i := range n {
			c := b[pos+i] ^ mask
			if pos+i == 0 {
				c ^= 0x80
			}
			x = x<<8 | uint32(c)
		}
		pos += n
		if x >= powersOfTen[digits] {
			return "", fmt.Errorf("decimal(%d,%d) digit group %d exceeds %d digits", precision, scale, x, digits)
		}
		s := strconv.FormatUint(uint64(x), 10)
		return strings.Repeat("0", digits-len(s)) + s, nil
	}
	var ip, fp strings.Builder
	if intgRest > 0 {
		g, err := group(decimalDigitBytes[intgRest], intgRest)
		if err != nil {
			return "", err
		}
		ip.WriteString(g)
	}
	for range intgWords {
		g, err := group(4, 9)
		if err != nil {
			return "", err
		}
		ip.WriteString(g)
	}
	for range fracWords {
		g, err := group(4, 9)
		if err != nil {
			return "", err
		}
		fp.WriteString(g)
	}
	if fracRest > 0 {
		g, err := group(decimalDigitBytes[fracRest], fracRest)
		if err != nil {
			return "", err
		}
		fp.WriteString(g)
	}
	integer := strings.TrimLeft(ip.String(), "0")
	if integer == "" {
		integer = "0"
	}
	text := integer
	if fp.Len() > 0 {
		text += "." + fp.String()
	}
	if negative && strings.Trim(text, "0.") != "" {
		text = "-" + text
	}
	return text, nil
}

type collationName struct {
	charset, collation string
}

// CollationByID returns the character set and collation names of a collation
// id, for the ids that MySQL 8 and MariaDB 10.11 agree on and that the
// package knows.
func CollationByID(id uint32) (charset, collation string, ok bool) {
	c, ok := collationsByID[id]
	return c.charset, c.collation, ok
}

var collationsByID = map[uint32]collationName{
	5:    {"latin1", "latin1_german1_ci"},
	8:    {"latin1", "latin1_swedish_ci"},
	11:   {"ascii", "ascii_general_ci"},
	15:   {"latin1", "latin1_danish_ci"},
	31:   {"latin1", "latin1_german2_ci"},
	33:   {"utf8mb3", "utf8mb3_general_ci"},
	45:   {"utf8mb4", "utf8mb4_general_ci"},
	46:   {"utf8mb4", "utf8mb4_bin"},
	47:   {"latin1", "latin1_bin"},
	48:   {"latin1", "latin1_general_ci"},
	49:   {"latin1", "latin1_general_cs"},
	63:   {"binary", "binary"},
	65:   {"ascii", "ascii_bin"},
	76:   {"utf8mb3", "utf8mb3_tolower_ci"},
	83:   {"utf8mb3", "utf8mb3_bin"},
	94:   {"latin1", "latin1_spanish_ci"},
	192:  {"utf8mb3", "utf8mb3_unicode_ci"},
	193:  {"utf8mb3", "utf8mb3_icelandic_ci"},
	194:  {"utf8mb3", "utf8mb3_latvian_ci"},
	195:  {"utf8mb3", "utf8mb3_romanian_ci"},
	196:  {"utf8mb3", "utf8mb3_slovenian_ci"},
	197:  {"utf8mb3", "utf8mb3_polish_ci"},
	198:  {"utf8mb3", "utf8mb3_estonian_ci"},
	199:  {"utf8mb3", "utf8mb3_spanish_ci"},
	200:  {"utf8mb3", "utf8mb3_swedish_ci"},
	201:  {"utf8mb3", "utf8mb3_turkish_ci"},
	202:  {"utf8mb3", "utf8mb3_czech_ci"},
	203:  {"utf8mb3", "utf8mb3_danish_ci"},
	204:  {"utf8mb3", "utf8mb3_lithuanian_ci"},
	205:  {"utf8mb3", "utf8mb3_slovak_ci"},
	206:  {"utf8mb3", "utf8mb3_spanish2_ci"},
	207:  {"utf8mb3", "utf8mb3_roman_ci"},
	208:  {"utf8mb3", "utf8mb3_persian_ci"},
	209:  {"utf8mb3", "utf8mb3_esperanto_ci"},
	210:  {"utf8mb3", "utf8mb3_hungarian_ci"},
	211:  {"utf8mb3", "utf8mb3_sinhala_ci"},
	212:  {"utf8mb3", "utf8mb3_german2_ci"},
	214:  {"utf8mb3", "utf8mb3_unicode_520_ci"},
	215:  {"utf8mb3", "utf8mb3_vietnamese_ci"},
	223:  {"utf8mb3", "utf8mb3_general_mysql500_ci"},
	224:  {"utf8mb4", "utf8mb4_unicode_ci"},
	225:  {"utf8mb4", "utf8mb4_icelandic_ci"},
	226:  {"utf8mb4", "utf8mb4_latvian_ci"},
	227:  {"utf8mb4", "utf8mb4_romanian_ci"},
	228:  {"utf8mb4", "utf8mb4_slovenian_ci"},
	229:  {"utf8mb4", "utf8mb4_polish_ci"},
	230:  {"utf8mb4", "utf8mb4_estonian_ci"},
	231:  {"utf8mb4", "utf8mb4_spanish_ci"},
	232:  {"utf8mb4", "utf8mb4_swedish_ci"},
	233:  {"utf8mb4", "utf8mb4_turkish_ci"},
	234:  {"utf8mb4", "utf8mb4_czech_ci"},
	235:  {"utf8mb4", "utf8mb4_danish_ci"},
	236:  {"utf8mb4", "utf8mb4_lithuanian_ci"},
	237:  {"utf8mb4", "utf8mb4_slovak_ci"},
	238:  {"utf8mb4", "utf8mb4_spanish2_ci"},
	239:  {"utf8mb4", "utf8mb4_roman_ci"},
	240:  {"utf8mb4", "utf8mb4_persian_ci"},
	241:  {"utf8mb4", "utf8mb4_esperanto_ci"},
	242:  {"utf8mb4", "utf8mb4_hungarian_ci"},
	243:  {"utf8mb4", "utf8mb4_sinhala_ci"},
	244:  {"utf8mb4", "utf8mb4_german2_ci"},
	246:  {"utf8mb4", "utf8mb4_unicode_520_ci"},
	247:  {"utf8mb4", "utf8mb4_vietnamese_ci"},
	255:  {"utf8mb4", "utf8mb4_0900_ai_ci"},
	278:  {"utf8mb4", "utf8mb4_0900_as_cs"},
	305:  {"utf8mb4", "utf8mb4_0900_as_ci"},
	309:  {"utf8mb4", "utf8mb4_0900_bin"},
	1032: {"latin1", "latin1_swedish_nopad_ci"},
	1035: {"ascii", "ascii_general_nopad_ci"},
	1057: {"utf8mb3", "utf8mb3_general_nopad_ci"},
	1069: {"utf8mb4", "utf8mb4_general_nopad_ci"},
	1070: {"utf8mb4", "utf8mb4_nopad_bin"},
	1071: {"latin1", "latin1_nopad_bin"},
	1089: {"ascii", "ascii_nopad_bin"},
	1107: {"utf8mb3", "utf8mb3_nopad_bin"},
	1216: {"utf8mb3", "utf8mb3_unicode_nopad_ci"},
	1238: {"utf8mb3", "utf8mb3_unicode_520_nopad_ci"},
	1248: {"utf8mb4", "utf8mb4_unicode_nopad_ci"},
	1270: {"utf8mb4", "utf8mb4_unicode_520_nopad_ci"},
}

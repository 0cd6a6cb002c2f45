package statement

// builtin lists the native functions a plain DML statement may call and
// still run on any apply session: each depends only on its arguments and on
// the session state the statement's events carry (timestamp, time zone,
// RAND seeds, INSERT_ID and LAST_INSERT_ID, pseudo_thread_id, the default
// database as USE sets it). Any other name may be a stored function, which can write other
// tables, or read state of one session (FOUND_ROWS, ROW_COUNT, GET_LOCK);
// MariaDB logs the unsafe ones as rows under MIXED anyway. Lower case, as
// the parser gives names.
var builtin = map[string]bool{}

func init() {
	for _, name := range []string{
		// comparison and control
		"coalesce", "ifnull", "nullif", "if", "isnull", "greatest", "least", "interval", "nvl", "nvl2",
		// numbers
		"abs", "ceil", "ceiling", "floor", "round", "truncate", "mod", "pow", "power", "sqrt", "exp", "ln", "log",
		"log2", "log10", "sign", "pi", "degrees", "radians", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
		"cot", "crc32", "conv", "bin", "hex", "unhex", "oct", "rand", "bit_count",
		// strings
		"concat", "concat_ws", "substring", "substr", "mid", "left", "right", "length", "char_length",
		"character_length", "octet_length", "bit_length", "lower", "lcase", "upper", "ucase", "trim", "ltrim",
		"rtrim", "lpad", "rpad", "replace", "repeat", "reverse", "insert", "locate", "instr", "position", "space",
		"strcmp", "format", "md5", "sha", "sha1", "sha2", "ascii", "ord", "char", "elt", "field", "find_in_set",
		"make_set", "export_set", "quote", "soundex", "substring_index", "to_base64", "from_base64",
		"regexp_replace", "regexp_substr", "regexp_instr", "charset", "collation", "coercibility", "convert",
		"cast", "binary",
		// dates and times (NOW() and the like read the statement's timestamp)
		"now", "current_timestamp", "localtime", "localtimestamp", "curdate", "current_date", "curtime",
		"current_time", "utc_date", "utc_time", "utc_timestamp", "unix_timestamp", "from_unixtime", "date",
		"time", "timestamp", "year", "month", "day", "dayofmonth", "dayofweek", "dayofyear", "hour", "minute",
		"second", "microsecond", "week", "weekday", "weekofyear", "yearweek", "quarter", "monthname", "dayname",
		"date_add", "date_sub", "adddate", "subdate", "addtime", "subtime", "datediff", "timediff",
		"timestampdiff", "timestampadd", "date_format", "time_format", "str_to_date", "makedate", "maketime",
		"period_add", "period_diff", "to_days", "from_days", "to_seconds", "sec_to_time", "time_to_sec",
		"last_day", "convert_tz", "extract", "get_format",
		// session values the events carry
		// (not DATABASE(): an event flagged to suppress its USE would read
		// whatever default database the apply session has)
		"last_insert_id", "connection_id",
		// network
		"inet_aton", "inet_ntoa", "inet6_aton", "inet6_ntoa", "is_ipv4", "is_ipv6",
		// JSON
		"json_array", "json_object", "json_extract", "json_unquote", "json_quote", "json_set", "json_insert",
		"json_replace", "json_remove", "json_valid", "json_length", "json_contains", "json_contains_path",
		"json_keys", "json_type", "json_depth", "json_merge", "json_merge_patch", "json_merge_preserve",
		"json_array_append", "json_array_insert", "json_search", "json_value", "json_query", "json_compact",
		"json_detailed", "json_loose",
	} {
		builtin[name] = true
	}
}

// This file owns the my.cnf of a sandbox server: it is rewritten from the
// ServerConfig on every start, so the file on disk always describes the
// running mariadbd, and the port it records is where that server listens.
package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func (s *Server) renderMyCnf() string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	line("# Written by gapless sandbox on every start of %q; edits are overwritten.", s.Config.Name)
	line("# Add settings through ServerConfig.Extra (or --primary/--target extras) instead.")
	line("[mariadbd]")
	line("datadir=%s", s.DataDir)
	line("tmpdir=%s", s.tmpDir())
	line("socket=%s", s.Socket)
	line("pid-file=%s", s.PidFile)
	line("log-error=%s", s.ErrorLog)
	line("port=%d", s.Port)
	line("bind-address=127.0.0.1")
	line("server_id=%d", s.ServerID())
	line("skip-name-resolve")
	line("gtid_domain_id=0")
	line("innodb_buffer_pool_size=256M")
	line("innodb_log_file_size=256M")
	line("max_connections=500")
	line("max_allowed_packet=1G")
	line("character_set_server=utf8mb4")
	if s.Config.Durable {
		line("innodb_flush_log_at_trx_commit=1")
		line("sync_binlog=1")
	} else {
		line("innodb_flush_log_at_trx_commit=2")
		line("sync_binlog=0")
	}
	if s.Config.Binlog {
		format := s.Config.BinlogFormat
		if format == "" {
			format = "ROW"
		}
		line("log_bin=%s", s.binlogBase())
		line("log_bin_index=%s.index", s.binlogBase())
		line("binlog_format=%s", format)
		line("binlog_row_image=FULL")
		line("binlog_row_metadata=FULL")
		line("binlog_checksum=CRC32")
		line("log_slave_updates=ON")
		line("gtid_strict_mode=ON")
	}
	for _, extra := range s.Config.Extra {
		line("%s", extra)
	}
	line("")
	line("# For humans: mariadb --defaults-file=%s", s.cnfPath)
	line("[client]")
	line("user=root")
	line("socket=%s", s.Socket)
	line("port=%d", s.Port)
	return b.String()
}

func (s *Server) writeMyCnf() error {
	if err := os.WriteFile(s.cnfPath, []byte(s.renderMyCnf()), 0o644); err != nil {
		return fmt.Errorf("writing %s config: %w", s.Config.Name, err)
	}
	return nil
}

// portInMyCnf returns the port the [mariadbd] section of an existing my.cnf
// names, or 0 when there is no such file or line.
func (s *Server) portInMyCnf() int {
	f, err := os.Open(s.cnfPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "[") {
			section = l
			continue
		}
		if section != "[mariadbd]" {
			continue
		}
		key, value, ok := strings.Cut(l, "=")
		if !ok || strings.TrimSpace(key) != "port" {
			continue
		}
		if p, err := strconv.Atoi(strings.TrimSpace(value)); err == nil {
			return p
		}
	}
	return 0
}

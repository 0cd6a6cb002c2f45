package binlog

import (
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// TestFormatFlavor: a MariaDB binlog is known as one by its event types even
// when the server's version does not name MariaDB (mysql-test starts servers
// with --version=10.5.99).
func TestFormatFlavor(t *testing.T) {
	tests := []struct {
		version string
		types   int
		want    Flavor
	}{
		{"10.11.19-MariaDB-0+deb12u1-log", 168, FlavorMariaDB},
		{"10.5.99", 168, FlavorMariaDB},
		{"5.5.5-10.4.0-MariaDB", 40, FlavorMariaDB},
		{"8.0.36", 41, FlavorMySQL},
		{"5.7.44-log", 38, FlavorMySQL},
	}
	for _, tt := range tests {
		fde := &replication.FormatDescriptionEvent{ServerVersion: tt.version, EventTypeHeaderLengths: make([]byte, tt.types)}
		if got := FormatFlavor(fde); got != tt.want {
			t.Errorf("%q with %d event types: %s, want %s", tt.version, tt.types, got, tt.want)
		}
	}
}

// TestFormatFlavorOfARealBinlog: the format description event MariaDB 10.11
// wrote is MariaDB's by its event types alone.
func TestFormatFlavorOfARealBinlog(t *testing.T) {
	data := readFixture(t)[len(binlogMagic):]
	size := binary.LittleEndian.Uint32(data[9:])
	ev, err := replication.NewBinlogParser().Parse(data[:size])
	if err != nil {
		t.Fatal(err)
	}
	fde, ok := ev.Event.(*replication.FormatDescriptionEvent)
	if !ok {
		t.Fatalf("the first event is a %T", ev.Event)
	}
	fde.ServerVersion = "10.5.99"
	if got := FormatFlavor(fde); got != FlavorMariaDB {
		t.Errorf("%d event types: %s, want mariadb", len(fde.EventTypeHeaderLengths), got)
	}
}

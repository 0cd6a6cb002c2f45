package galera

import (
	"errors"
	"strings"
	"testing"
)

func TestReadANodeAndALoneServer(t *testing.T) {
	cluster := func(q string) ([][]string, error) {
		if strings.HasPrefix(q, "SHOW GLOBAL VARIABLES") {
			return [][]string{{"wsrep_on", "ON"}, {"wsrep_auto_increment_control", "ON"}, {"wsrep_gtid_mode", "OFF"},
				{"wsrep_mode", "replicate_myisam"}, {"wsrep_max_ws_rows", "0"}, {"wsrep_node_name", "n2"}}, nil
		}
		return [][]string{{"wsrep_ready", "ON"}, {"wsrep_local_state_comment", "Synced"}, {"wsrep_cluster_status", "Primary"}, {"wsrep_cluster_size", "3"}}, nil
	}
	n, err := Read(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if !n.On || !n.AutoIncrementControl || n.GTIDMode || n.ClusterSize != 3 || n.Usable() != nil {
		t.Fatalf("read %+v", n)
	}
	if !n.ReplicatesEngine("MyISAM") || n.ReplicatesEngine("Aria") || n.ReplicatesEngine("MEMORY") || !n.ReplicatesEngine("InnoDB") {
		t.Fatalf("engines of %+v", n)
	}
	lone, err := Read(func(q string) ([][]string, error) {
		if strings.Contains(q, "STATUS") {
			t.Fatal("a lone server's status was read")
		}
		return nil, nil
	})
	if err != nil || lone.On || lone.Usable() != nil {
		t.Fatalf("lone server: %+v %v", lone, err)
	}
	if _, err := Read(func(string) ([][]string, error) { return nil, errors.New("gone") }); err == nil {
		t.Fatal("an error was not passed on")
	}
}

func TestUsableNamesTheState(t *testing.T) {
	for _, c := range []struct {
		node Node
		want string
	}{
		{Node{On: true, Ready: true, State: "Synced", ClusterStatus: "non-Primary"}, "wsrep_cluster_status=non-Primary"},
		{Node{On: true, Ready: false, State: "Synced", ClusterStatus: "Primary"}, "wsrep_ready=OFF"},
		{Node{On: true, Ready: true, State: "Donor/Desynced", ClusterStatus: "Primary"}, "wsrep_local_state_comment=Donor/Desynced"},
	} {
		err := c.node.Usable()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.node, err, c.want)
		}
	}
}

func TestNotReplicatedSaysWhatToDo(t *testing.T) {
	if m := NotReplicated("`d`.`m`", "MyISAM"); !strings.Contains(m, "REPLICATE_MYISAM") || !strings.Contains(m, "ENGINE=InnoDB") {
		t.Error(m)
	}
	if m := NotReplicated("`d`.`m`", "MEMORY"); !strings.Contains(m, "no setting") {
		t.Error(m)
	}
}

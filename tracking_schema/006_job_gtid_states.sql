-- goarchive tracking registry, version 6: the GTID history of each job's recorded source (the source's
-- @@gtid_executed on MySQL, @@gtid_binlog_state,@@gtid_slave_pos on MariaDB), recorded with the source in `jobs`
-- whenever that is (a run with no unfinished work). The unfinished-work guard reads it: on MySQL, a server whose
-- history holds another job's whole recorded history (a sibling replica after a failover) holds that job's source
-- data, which the server UUID alone cannot tell. "{schema}" is replaced by the quoted job_schema. A table of its
-- own, so that the migration needs no ALTER.
CREATE TABLE IF NOT EXISTS {schema}.`job_gtid_states` (
  `job_id`     BIGINT UNSIGNED NOT NULL,
  `gtid_state` MEDIUMTEXT      NOT NULL,
  PRIMARY KEY (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

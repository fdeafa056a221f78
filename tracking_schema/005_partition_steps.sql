-- goarchive tracking registry, version 5: the partition path's steps (pipeline/partition_path.h). "{schema}" is
-- replaced by the quoted job_schema.

-- One row per partition a job takes whole, per claim scope (source server, database, root table), written before
-- each step it names: `detaching` (the DDL that moves the partition's rows into the side table on the source may
-- run), `detached` (the rows are in `side_table`, on the source, and nowhere else), `copied` (archive: every row
-- of the side table is in the archive, verified; the side table may be dropped), `dropping` (purge: the rows
-- outside `where` went back; the side table may be dropped), `dropped` (done), `left` (the
-- DDL gave up on the table's metadata lock: nothing moved). `copied_after` is the key of the last side-table row
-- whose copy committed, written in the same destination transaction as that copy: a rerun copies only what is
-- after it, and a row after it that it finds in the archive is not this job's. Every move is guarded by `state`
-- and `version` (I6). A partition name taken again later (a rotated layout) reuses its row from `dropped` or
-- `left`. A table of its own, so that the migration needs no ALTER.
CREATE TABLE IF NOT EXISTS {schema}.`partition_steps` (
  `job_id`         BIGINT UNSIGNED NOT NULL,
  `scope`          CHAR(32)        NOT NULL,
  `partition_name` VARCHAR(64)     NOT NULL,
  `side_table`     VARCHAR(64)     NOT NULL,
  `command`        VARCHAR(16)     NOT NULL,
  `detach`         VARCHAR(16)     NOT NULL,
  `state`          VARCHAR(16)     NOT NULL,
  `copied_after`   BLOB            NULL,
  `rows_copied`    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  `rows_back`      BIGINT UNSIGNED NOT NULL DEFAULT 0,
  `run_id`         BIGINT UNSIGNED NULL,
  `version`        INT UNSIGNED    NOT NULL DEFAULT 0,
  `updated_at`     DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (`job_id`, `scope`, `partition_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

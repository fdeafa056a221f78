-- goarchive tracking registry, version 1. "{schema}" is replaced by the quoted job_schema.
-- Every invariant is enforced by the database itself (seed 000): see the comment on each key.
CREATE TABLE IF NOT EXISTS {schema}.`schema_version` (
  `version`    INT UNSIGNED NOT NULL,
  `file`       VARCHAR(255) NOT NULL,
  `label`      VARCHAR(64)  NOT NULL DEFAULT 'goarchive tracking schema',
  `applied_at` DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (`version`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per job, reused across runs (I5); `version` guards every transition (I6, no ABA).
CREATE TABLE IF NOT EXISTS {schema}.`jobs` (
  `id`                 BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  `name`               VARCHAR(64)  NOT NULL,
  `command`            VARCHAR(16)  NOT NULL DEFAULT '',
  `status`             VARCHAR(16)  NOT NULL DEFAULT 'idle',
  `run_id`             BIGINT UNSIGNED NULL,
  `source_host`        VARCHAR(255) NOT NULL DEFAULT '',
  `source_port`        INT UNSIGNED NOT NULL DEFAULT 0,
  `source_database`    VARCHAR(64)  NOT NULL DEFAULT '',
  `source_flavor`      VARCHAR(16)  NOT NULL DEFAULT '',
  `source_server_id`   BIGINT UNSIGNED NULL,
  `source_server_uuid` VARCHAR(64)  NULL,
  `source_gtid_domain` BIGINT UNSIGNED NULL,
  `destination_database` VARCHAR(64) NOT NULL DEFAULT '',
  `root_table`         VARCHAR(64)  NOT NULL DEFAULT '',
  `heartbeat_at`       DATETIME(6)  NULL,
  `version`            BIGINT UNSIGNED NOT NULL DEFAULT 0,
  `created_at`         DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  `updated_at`         DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (`id`),
  UNIQUE KEY `uk_name` (`name`),
  KEY `k_status_heartbeat` (`status`, `heartbeat_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The source tables of each job's tree, for the unfinished-work guard; table_key is the table lock's hash.
CREATE TABLE IF NOT EXISTS {schema}.`job_tables` (
  `job_id`        BIGINT UNSIGNED NOT NULL,
  `table_key`     CHAR(32)     NOT NULL,
  `database_name` VARCHAR(64)  NOT NULL,
  `table_name`    VARCHAR(64)  NOT NULL,
  PRIMARY KEY (`job_id`, `table_key`),
  KEY `k_table_key` (`table_key`, `job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Run history. The generated column + unique key allow at most one running run per job (I1), enforced by the
-- database even where advisory locks cannot be (a proxy, a multi-primary cluster).
CREATE TABLE IF NOT EXISTS {schema}.`runs` (
  `id`           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  `job_id`       BIGINT UNSIGNED NOT NULL,
  `command`      VARCHAR(16)  NOT NULL,
  `status`       VARCHAR(16)  NOT NULL DEFAULT 'running',
  `active_slot`  TINYINT AS (CASE WHEN `status` = 'running' THEN 1 ELSE NULL END) STORED,
  `host`         VARCHAR(255) NOT NULL DEFAULT '',
  `pid`          INT UNSIGNED NOT NULL DEFAULT 0,
  `source_connection` BIGINT UNSIGNED NULL,
  `destination_connection` BIGINT UNSIGNED NULL,
  `started_at`   DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  `heartbeat_at` DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  `ended_at`     DATETIME(6)  NULL,
  `exit_code`    INT NULL,
  `reason`       VARCHAR(1024) NULL,
  `summary`      MEDIUMTEXT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `uk_one_running_run` (`job_id`, `active_slot`),
  KEY `k_job_run` (`job_id`, `id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The work log, one row per batch: its state moves copied -> deleting -> done (purge: deleting -> done), each
-- transition guarded by the expected state and `version` (I6). batch_keys holds the batch's encoded root keys so
-- that a rerun can finish an unfinished batch (recovery). `unfinished` is 1 while copied or deleting.
CREATE TABLE IF NOT EXISTS {schema}.`batches` (
  `id`          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  `job_id`      BIGINT UNSIGNED NOT NULL,
  `run_id`      BIGINT UNSIGNED NOT NULL,
  `batch_no`    INT UNSIGNED NOT NULL,
  `scope`       CHAR(32)     NOT NULL,
  `state`       VARCHAR(16)  NOT NULL,
  `unfinished`  TINYINT AS (CASE WHEN `state` IN ('copied', 'deleting') THEN 1 ELSE NULL END) STORED,
  `roots`       INT UNSIGNED NOT NULL,
  `changed`     INT UNSIGNED NOT NULL DEFAULT 0,
  `version`     INT UNSIGNED NOT NULL DEFAULT 1,
  `created_at`  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  `updated_at`  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (`id`),
  KEY `k_job_unfinished` (`job_id`, `unfinished`, `id`),
  KEY `k_scope_unfinished` (`scope`, `unfinished`, `job_id`),
  KEY `k_job_state_updated` (`job_id`, `state`, `updated_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The encoded root keys of each batch, written once when the batch is claimed and never updated: a batch's
-- state changes rewrite only its small row in `batches` (and the binary log only that).
CREATE TABLE IF NOT EXISTS {schema}.`batch_keys` (
  `batch_id`  BIGINT UNSIGNED NOT NULL,
  `root_keys` LONGBLOB        NOT NULL,
  PRIMARY KEY (`batch_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- No double claiming (I2): a root is in at most one job's unfinished batch. `scope` hashes the source server,
-- database and root table. Claiming a batch starts with a guarded write on its scope's row (UPDATE ... version =
-- version + 1, affected rows must be 1), which holds the row until the claim commits: claimers of one scope
-- serialize, and each then checks that no unfinished batch of another job in the scope holds one of its roots
-- before it inserts its batch. A batch's move to a terminal state turns `unfinished` to NULL, releasing its
-- roots with it (seed 000, §3.1).
CREATE TABLE IF NOT EXISTS {schema}.`claim_scopes` (
  `scope`      CHAR(32)        NOT NULL,
  `version`    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  `updated_at` DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (`scope`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per (job, root) for the roots that need a memory after their batch: 'copied' marks written by
-- copy-only, so that a rerun does not copy a root again and a later archive of the same job replaces that copy
-- with the root's current version.
CREATE TABLE IF NOT EXISTS {schema}.`root_marks` (
  `job_id`        BIGINT UNSIGNED NOT NULL,
  `root_key_hash` BINARY(16)   NOT NULL,
  `state`         VARCHAR(16)  NOT NULL,
  `updated_at`    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (`job_id`, `root_key_hash`),
  KEY `k_job_state` (`job_id`, `state`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

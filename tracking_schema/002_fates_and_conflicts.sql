-- goarchive tracking registry, version 2: what a delete decided, and the roots no run may touch until a person
-- has looked. "{schema}" is replaced by the quoted job_schema.

-- The roots of a batch that its delete left in the source (changed after their copy, or no longer matching
-- `where`), written in the destination transaction that moves the batch to `deleting`, which commits before
-- the source delete does. A recovery that finds the batch `deleting` knows these roots were never deleted, so
-- their archived copy may go; every other root of the batch was meant to be deleted. Written once, and only for
-- batches where some root stayed.
CREATE TABLE IF NOT EXISTS {schema}.`batch_stayed` (
  `batch_id`  BIGINT UNSIGNED NOT NULL,
  `root_keys` LONGBLOB        NOT NULL,
  PRIMARY KEY (`batch_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Roots whose archived version and source version differ after a crash at the delete's commit, when nothing
-- proves which one is current: both are kept, every run of the job leaves the root alone and exits 1 until one
-- version is removed by a person; the next run then sees a single version and forgets the conflict.
CREATE TABLE IF NOT EXISTS {schema}.`conflicts` (
  `job_id`        BIGINT UNSIGNED NOT NULL,
  `root_key_hash` BINARY(16)      NOT NULL,
  `root_key`      BLOB            NOT NULL,
  `batch_id`      BIGINT UNSIGNED NOT NULL,
  `created_at`    DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (`job_id`, `root_key_hash`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

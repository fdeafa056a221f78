-- goarchive tracking registry, version 4: the proof that a batch's source delete committed. "{schema}" is
-- replaced by the quoted job_schema.

-- The token a batch's delete transaction wrote into the source's goarchive_commits table, recorded with the
-- batch's move to `deleting` (which commits on the destination before the source does). A recovery that finds
-- the batch `deleting` looks the token up in the source under a lock: there means the delete committed, absent
-- means it rolled back. A table of its own, so that the migration needs no ALTER; pruned with its batch.
CREATE TABLE IF NOT EXISTS {schema}.`batch_proofs` (
  `batch_id` BIGINT UNSIGNED NOT NULL,
  `token`    BINARY(16)      NOT NULL,
  PRIMARY KEY (`batch_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

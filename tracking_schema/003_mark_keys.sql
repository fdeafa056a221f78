-- goarchive tracking registry, version 3: the keys of copy-only's marks, so that a later run can find each copy
-- again and compare it with the source (a copy goes stale when the application changes the root's tree, moves a
-- child away or makes the root stop matching `where`). A table of its own, so that the migration needs no ALTER.
-- "{schema}" is replaced by the quoted job_schema.
CREATE TABLE IF NOT EXISTS {schema}.`root_mark_keys` (
  `job_id`        BIGINT UNSIGNED NOT NULL,
  `root_key_hash` BINARY(16)      NOT NULL,
  `root_key`      BLOB            NOT NULL,
  PRIMARY KEY (`job_id`, `root_key_hash`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

-- goarchive tracking registry, version 3: copy-only's marks carry the root's key, so that a later run can find
-- the copy again and compare it with the source (a copy goes stale when the application changes the root's tree,
-- moves a child away or makes the root stop matching `where`). "{schema}" is replaced by the quoted job_schema.
ALTER TABLE {schema}.`root_marks` ADD COLUMN `root_key` BLOB NULL

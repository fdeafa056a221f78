-- scripts/bench.sh, scenarios 8 and 9: events keyed by (id, created DATE), as every table partitioned by date must
-- be (its partitioning column is part of its primary key). Same definition on the source and the destination.
CREATE TABLE dated_events (
  id BIGINT UNSIGNED NOT NULL,
  created DATE NOT NULL,
  kind VARCHAR(20) NOT NULL,
  user_id INT NOT NULL,
  payload VARCHAR(255) NULL,
  PRIMARY KEY (id, created),
  KEY k_created (created)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

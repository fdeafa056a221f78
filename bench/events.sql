-- scripts/bench.sh, scenario 1 and 4: the wide single table. Same definition on the source and the destination.
CREATE TABLE events (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  created_at DATETIME NOT NULL,
  kind VARCHAR(20) NOT NULL,
  user_id INT NOT NULL,
  payload VARCHAR(255) NULL,
  KEY k_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

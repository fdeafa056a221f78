-- scripts/bench.sh: single tables with a CHAR(36) UUID primary key and with a composite root key.
CREATE TABLE uuid_items (
  id CHAR(36) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  created_at DATETIME NOT NULL,
  owner_id INT NOT NULL,
  payload VARCHAR(255) NULL,
  KEY k_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

CREATE TABLE tenant_items (
  tenant_id INT NOT NULL,
  id BIGINT NOT NULL,
  created_at DATETIME NOT NULL,
  payload VARCHAR(255) NULL,
  PRIMARY KEY (tenant_id, id),
  KEY k_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

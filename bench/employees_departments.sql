-- The departments that dept_emp and dept_manager reference (source only, not archived).
CREATE TABLE IF NOT EXISTS departments (
  dept_no CHAR(4) NOT NULL PRIMARY KEY,
  dept_name VARCHAR(40) NOT NULL,
  UNIQUE KEY k_name (dept_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

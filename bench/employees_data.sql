-- @employees employees hired one every 0.4 days from 1985-01-01 (hire_date rises with emp_no), 10 salaries each
-- (yearly from the hire date), 1.5 titles each, one department each, a manager record for every 50th.
INSERT INTO departments SELECT CONCAT('d', LPAD(seq, 3, '0')), CONCAT('Department ', seq) FROM seq_1_to_9;
INSERT INTO employees
  SELECT 10000 + seq, DATE'1950-01-01' + INTERVAL (seq * 7) % 5000 DAY,
         ELT(1 + seq % 5, 'Georgi', 'Bezalel', 'Parto', 'Chirstian', 'Kyoichi'),
         ELT(1 + seq % 4, 'Facello', 'Simmel', 'Bamford', 'Koblick'),
         IF(seq % 2, 'M', 'F'), DATE'1985-01-01' + INTERVAL (seq * 2) DIV 5 DAY
  FROM seq_1_to_100000000 WHERE seq <= @employees;
INSERT INTO salaries
  SELECT e.emp_no, 40000 + (e.emp_no * 31 + y.seq * 977) % 60000, e.hire_date + INTERVAL y.seq YEAR,
         e.hire_date + INTERVAL y.seq + 1 YEAR
  FROM employees e JOIN seq_0_to_9 y;
INSERT INTO titles
  SELECT emp_no, 'Engineer', hire_date, IF(emp_no % 2, NULL, hire_date + INTERVAL 5 YEAR) FROM employees;
INSERT INTO titles
  SELECT emp_no, 'Senior Engineer', hire_date + INTERVAL 5 YEAR, NULL FROM employees WHERE emp_no % 2 = 0;
INSERT INTO dept_emp
  SELECT emp_no, CONCAT('d', LPAD(1 + emp_no % 9, 3, '0')), hire_date, DATE'9999-01-01' FROM employees;
INSERT INTO dept_manager
  SELECT emp_no, CONCAT('d', LPAD(1 + emp_no % 9, 3, '0')), hire_date, DATE'9999-01-01' FROM employees
  WHERE emp_no % 50 = 0;

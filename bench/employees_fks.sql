-- The source's foreign keys (added after a load with foreign_key_checks = 0: no validation scan).
ALTER TABLE salaries ADD CONSTRAINT fk_sal_emp FOREIGN KEY (emp_no) REFERENCES employees (emp_no);
ALTER TABLE titles ADD CONSTRAINT fk_titles_emp FOREIGN KEY (emp_no) REFERENCES employees (emp_no);
ALTER TABLE dept_emp ADD CONSTRAINT fk_de_emp FOREIGN KEY (emp_no) REFERENCES employees (emp_no),
  ADD CONSTRAINT fk_de_dept FOREIGN KEY (dept_no) REFERENCES departments (dept_no);
ALTER TABLE dept_manager ADD CONSTRAINT fk_dm_emp FOREIGN KEY (emp_no) REFERENCES employees (emp_no),
  ADD CONSTRAINT fk_dm_dept FOREIGN KEY (dept_no) REFERENCES departments (dept_no);

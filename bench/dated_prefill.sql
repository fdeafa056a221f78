-- scripts/bench.sh, scenario 9: the archive already holds @prefill older rows of dated_events (ids from
-- 1,000,000,000, dated 2015 onwards: none of the source's keys), as after earlier runs. Run on the destination
-- in the database that holds `dated_events`.
INSERT INTO dated_events (id, created, kind, user_id, payload)
  SELECT 1000000000 + seq, DATE(TIMESTAMP'2015-01-01 00:00:00' + INTERVAL seq * 37 SECOND), 'old', seq % 100003,
         LEFT(CONCAT(SHA2(seq, 512), MD5(seq)), 60 + seq % 190)
  FROM seq_1_to_100000000 WHERE seq <= @prefill;

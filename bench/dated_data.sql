-- @rows dated events, one every 37 seconds from 2021-01-01 (created rises with id, about 2,300 a day), payloads of
-- 60 to 249 characters, every 50th NULL. Run in the database that holds `dated_events`.
INSERT INTO dated_events (id, created, kind, user_id, payload)
  SELECT seq, DATE(TIMESTAMP'2021-01-01 00:00:00' + INTERVAL seq * 37 SECOND),
         ELT(1 + seq % 6, 'click', 'view', 'purchase', 'signup', 'logout', 'search'),
         (seq * 7919) % 100003,
         IF(seq % 50 = 0, NULL, LEFT(CONCAT(SHA2(seq, 512), MD5(seq), SHA2(seq, 256)), 60 + seq % 190))
  FROM seq_1_to_100000000 WHERE seq <= @rows;

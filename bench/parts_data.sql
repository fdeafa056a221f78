-- @rows events spread evenly over 2023-01-01 to 2024-12-18 (62,000,000 seconds, whatever @rows is: the 24 monthly
-- partitions always hold them, about @rows / 24 each, and half of them are older than 2024-01-01), created rising
-- with id, payloads of 60 to 249 characters, every 50th NULL. scripts/bench_probe.py computes created from id the
-- same way. Run in the database that holds `part_events`.
INSERT INTO part_events (id, created, kind, user_id, payload)
  SELECT seq, DATE(TIMESTAMP'2023-01-01 00:00:00' + INTERVAL (seq * 62000000 DIV @rows) SECOND),
         ELT(1 + seq % 6, 'click', 'view', 'purchase', 'signup', 'logout', 'search'),
         (seq * 7919) % 100003,
         IF(seq % 50 = 0, NULL, LEFT(CONCAT(SHA2(seq, 512), MD5(seq), SHA2(seq, 256)), 60 + seq % 190))
  FROM seq_1_to_100000000 WHERE seq <= @rows;

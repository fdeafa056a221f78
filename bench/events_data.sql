-- @rows events, one every 37 seconds from 2021-01-01 (created_at rises with id), payloads of 60 to 249
-- characters, every 50th NULL, every 97th with non-ASCII text. Run in the database that holds `events`.
INSERT INTO events (id, created_at, kind, user_id, payload)
  SELECT seq, TIMESTAMP'2021-01-01 00:00:00' + INTERVAL seq * 37 SECOND,
         ELT(1 + seq % 6, 'click', 'view', 'purchase', 'signup', 'logout', 'search'),
         (seq * 7919) % 100003,
         IF(seq % 50 = 0, NULL,
            LEFT(CONCAT(IF(seq % 97 = 0, 'naïve café ✓ ', ''), SHA2(seq, 512), MD5(seq), SHA2(seq, 256)), 60 + seq % 190))
  FROM seq_1_to_100000000 WHERE seq <= @rows;

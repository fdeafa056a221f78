-- @rows rows each. uuid_items: random-looking UUIDs (MD5 of the sequence, so every load is identical) whose order
-- is unrelated to created_at; tenant_items: 50 tenants, ids rising per tenant, created_at rising with the sequence.
INSERT INTO uuid_items
  SELECT CONCAT_WS('-', SUBSTR(MD5(seq), 1, 8), SUBSTR(MD5(seq), 9, 4), SUBSTR(MD5(seq), 13, 4),
                   SUBSTR(MD5(seq), 17, 4), SUBSTR(MD5(seq), 21, 12)),
         TIMESTAMP'2021-01-01 00:00:00' + INTERVAL seq * 37 SECOND, (seq * 7919) % 100003,
         IF(seq % 50 = 0, NULL, LEFT(CONCAT(SHA2(seq, 512), MD5(seq)), 60 + seq % 150))
  FROM seq_1_to_100000000 WHERE seq <= @rows;
INSERT INTO tenant_items
  SELECT 1 + seq % 50, seq DIV 50, TIMESTAMP'2021-01-01 00:00:00' + INTERVAL seq * 37 SECOND,
         IF(seq % 50 = 0, NULL, LEFT(CONCAT(SHA2(seq, 512), MD5(seq)), 60 + seq % 150))
  FROM seq_1_to_100000000 WHERE seq <= @rows;

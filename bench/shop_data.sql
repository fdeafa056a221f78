-- @orders orders, one every 150 seconds from 2021-01-01 (created_at rises with id); children are inserted in
-- order id order, as an application creates them: ~4 order_items, 1 payment, 0.5 shipments per order and
-- ~2 shipment_items per shipment. Run in the database that holds the tables.
INSERT INTO orders (id, customer_id, created_at, status, total, note)
  SELECT seq, 1 + (seq * 31) % 5000, TIMESTAMP'2021-01-01 00:00:00' + INTERVAL seq * 150 SECOND,
         ELT(1 + seq % 3, 'paid', 'shipped', 'closed'), ROUND((seq * 137) % 100000 / 100, 2),
         IF(seq % 7 = 0, NULL, CONCAT('order note ', seq, IF(seq % 11 = 0, ' ✓ naïve café', '')))
  FROM seq_1_to_100000000 WHERE seq <= @orders;
INSERT INTO order_items (order_id, sku, qty, price)
  SELECT o.id, CONCAT('SKU-', o.id, '-', s.seq), 1 + (o.id + s.seq) % 5, ROUND((o.id * s.seq) % 20000 / 100 + 0.99, 2)
  FROM orders o JOIN seq_1_to_7 s ON s.seq <= 1 + o.id % 7 ORDER BY o.id, s.seq;
INSERT INTO payments (order_id, amount, paid_at, method)
  SELECT id, total, created_at + INTERVAL 1 HOUR + INTERVAL (id * 7919) % 1000000 MICROSECOND,
         ELT(1 + id % 3, 'card', 'transfer', 'cash')
  FROM orders ORDER BY id;
INSERT INTO shipments (order_id, carrier, shipped_at)
  SELECT id, IF(id % 4 = 0, 'DHL', 'UPS'), IF(id % 5 = 0, NULL, created_at + INTERVAL 2 DAY)
  FROM orders WHERE id % 2 = 0 ORDER BY id;
INSERT INTO shipment_items (shipment_id, order_item_id, qty)
  SELECT sh.id, IF(s.seq = 3, NULL, sh.order_id * 4 + s.seq), 1 + (sh.id + s.seq) % 3
  FROM shipments sh JOIN seq_1_to_3 s ON s.seq <= 1 + sh.id % 3 ORDER BY sh.id, s.seq;

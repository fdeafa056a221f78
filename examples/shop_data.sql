-- Deterministic sample data: @orders orders (set by the caller), half older than two years.
SET @orders = IFNULL(@orders, 4000);
INSERT INTO customers (name, email)
  SELECT CONCAT('customer ', seq), CONCAT('c', seq, '@example.com') FROM seq_1_to_500;
INSERT INTO orders (customer_id, created_at, status, total, note)
  SELECT 1 + seq % 500,
         IF(seq % 2 = 0, NOW() - INTERVAL 3 YEAR + INTERVAL seq MINUTE, NOW() - INTERVAL 30 DAY + INTERVAL seq MINUTE),
         ELT(1 + seq % 3, 'paid', 'shipped', 'closed'), ROUND(seq * 1.37 % 1000, 2),
         IF(seq % 7 = 0, NULL, CONCAT('order note ', seq, ' ✓ naïve café'))
  FROM seq_1_to_1000000 WHERE seq <= @orders;
INSERT INTO order_items (order_id, sku, qty, price)
  SELECT o.id, CONCAT('SKU-', o.id, '-', s.seq), 1 + (o.id + s.seq) % 5, ROUND((o.id * s.seq) % 200 + 0.99, 2)
  FROM orders o JOIN seq_1_to_4 s ON s.seq <= 1 + o.id % 4;
INSERT INTO payments (order_id, amount, paid_at, method)
  SELECT id, total, created_at + INTERVAL 1 HOUR, ELT(1 + id % 3, 'card', 'transfer', 'cash') FROM orders;
INSERT INTO shipments (order_id, carrier, shipped_at)
  SELECT id, IF(id % 2, 'DHL', 'UPS'), IF(id % 5 = 0, NULL, created_at + INTERVAL 2 DAY) FROM orders WHERE id % 2 = 0;
INSERT INTO shipment_items (shipment_id, order_item_id, qty)
  SELECT sh.id, NULL, 1 + s.seq FROM shipments sh JOIN seq_1_to_2 s;

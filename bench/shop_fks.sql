-- The source's foreign keys (added after a load with foreign_key_checks = 0: no validation scan).
ALTER TABLE order_items ADD CONSTRAINT fk_items_order FOREIGN KEY (order_id) REFERENCES orders (id);
ALTER TABLE payments ADD CONSTRAINT fk_payments_order FOREIGN KEY (order_id) REFERENCES orders (id);
ALTER TABLE shipments ADD CONSTRAINT fk_shipments_order FOREIGN KEY (order_id) REFERENCES orders (id);
ALTER TABLE shipment_items ADD CONSTRAINT fk_sitems_shipment FOREIGN KEY (shipment_id) REFERENCES shipments (id);

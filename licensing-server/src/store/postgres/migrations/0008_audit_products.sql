-- The products an audit entry's record belonged to (licenses, devices, addresses, products,
-- branches, releases), so that a key restricted to some products lists only their entries with
-- the right count and pages. Entries written before have none: such entries of records tied
-- to products are seen only by unrestricted keys.

ALTER TABLE audit_log ADD COLUMN product_ids uuid[];

-- Placeholder on branch quality only: the other helpers' migration 0006 takes
-- this number at merge (schema/embed.py wants numbers without gaps), and
-- this file is dropped then.
SELECT 1;

-- profd store, version 4: an index made for queries (daemon/store.c,
-- sql_add_filters; measured in docs/performance.md, Queries).
--
-- A query reads the samples of a window's drains, of one kind, often of a
-- few processes, and needs their stack, state and value. With all of these
-- in one index, in that order, SQLite seeks straight to (drain, kind[,
-- process]) and never reads the samples table itself: a day's query reads
-- only the index entries of its kind, a pid query only that process's.
CREATE INDEX samples_query ON samples(drain_id, kind, process_id, stack_id, state, value);

-- Its first column makes the old index on drain_id alone redundant (deleting
-- a drain's samples uses the new one); one index less to write per sample.
DROP INDEX samples_drain;

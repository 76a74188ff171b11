-- profd store, version 1: a normalized, pprof-like model. Samples point at
-- deduplicated stacks; stacks are lists of locations; a location is an
-- address in a mapping, resolved (or not) to a function.

-- One row per drain of the kernel maps: the time bucket samples belong to.
CREATE TABLE drains (
        id INTEGER PRIMARY KEY,
        start_ns INTEGER NOT NULL,      -- bucket start, Unix-epoch ns
        end_ns INTEGER NOT NULL,        -- bucket end (the drain), Unix-epoch ns
        samples INTEGER NOT NULL,       -- sum of cpu sample counts stored
        keys INTEGER NOT NULL           -- aggregation keys drained
);
CREATE INDEX drains_end ON drains(end_ns);

-- Data lost in a drain interval, one row per reason with a non-zero count.
CREATE TABLE drops (
        drain_id INTEGER NOT NULL REFERENCES drains(id),
        reason TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (drain_id, reason)
) WITHOUT ROWID;

-- A mapped file (or the kernel): identity is its build-id when it has one.
CREATE TABLE mappings (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL,             -- "/usr/lib/x86_64-linux-gnu/libc.so.6", "[kernel.kallsyms]", "[vdso]"
        build_id TEXT NOT NULL DEFAULT '', -- lowercase hex, '' when unknown
        UNIQUE (path, build_id)
);

CREATE TABLE functions (
        id INTEGER PRIMARY KEY,
        mapping_id INTEGER NOT NULL REFERENCES mappings(id),
        name TEXT NOT NULL,             -- demangled
        raw_name TEXT NOT NULL,         -- as in the symbol table
        UNIQUE (mapping_id, raw_name)
);

-- An address in a mapping: a file offset for user code, the address for the
-- kernel. Return addresses are stored minus one, so they fall inside the call.
CREATE TABLE locations (
        id INTEGER PRIMARY KEY,
        mapping_id INTEGER NOT NULL REFERENCES mappings(id),
        address INTEGER NOT NULL,
        function_id INTEGER REFERENCES functions(id), -- the function the code belongs to; NULL: unresolved
        kernel INTEGER NOT NULL DEFAULT 0,
        UNIQUE (mapping_id, address)
);

-- What debug info says is at a location: the chain of inlined calls, depth 0
-- the innermost, the last depth the location's own function, each with its
-- source file and line. A location without debug info has no rows here.
CREATE TABLE location_lines (
        location_id INTEGER NOT NULL REFERENCES locations(id),
        depth INTEGER NOT NULL,
        function_id INTEGER NOT NULL REFERENCES functions(id),
        file TEXT,
        line INTEGER NOT NULL,          -- 0: unknown
        inlined INTEGER NOT NULL,
        PRIMARY KEY (location_id, depth)
) WITHOUT ROWID;

-- A stack: location ids, root first, as little-endian 64-bit integers.
-- hash is a 64-bit hash of frames for lookup; frames decide equality.
CREATE TABLE stacks (
        id INTEGER PRIMARY KEY,
        hash INTEGER NOT NULL,
        frames BLOB NOT NULL
);
CREATE INDEX stacks_hash ON stacks(hash);

-- A process instance: (pid, start time) identifies it, pids are reused.
CREATE TABLE processes (
        id INTEGER PRIMARY KEY,
        pid INTEGER NOT NULL,
        start_ns INTEGER NOT NULL,      -- boot-time ns
        comm TEXT NOT NULL,
        exe TEXT,
        uid INTEGER,
        cgroup TEXT,
        UNIQUE (pid, start_ns)
);
CREATE INDEX processes_comm ON processes(comm);

-- Aggregated samples: one row per (drain, process, thread, stack, kind, state, peer).
CREATE TABLE samples (
        drain_id INTEGER NOT NULL REFERENCES drains(id),
        process_id INTEGER NOT NULL REFERENCES processes(id),
        tid INTEGER NOT NULL,
        cgroup_id INTEGER NOT NULL,
        kind INTEGER NOT NULL,          -- 0 cpu (value: samples), 1 offcpu, 2 wakeup (value: ns)
        state INTEGER NOT NULL,         -- task state at the block, offcpu and wakeup kinds
        peer_tid INTEGER NOT NULL,      -- wakeup: the thread whose blocked time was ended; else 0
        stack_id INTEGER NOT NULL REFERENCES stacks(id),
        value INTEGER NOT NULL
);
CREATE INDEX samples_drain ON samples(drain_id);
CREATE INDEX samples_process ON samples(process_id, drain_id);

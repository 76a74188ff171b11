-- profd store, version 2: what queries filter processes by. The systemd unit
-- and the container id are derived from the cgroup v2 path when a process is
-- recorded (daemon/cgroup.c); here the same rules fill them for processes
-- recorded before, so old data answers the new filters too.

-- The deepest component of the cgroup path ending in .service or .scope
-- ("nginx.service", "session-3.scope"); NULL when there is none.
ALTER TABLE processes ADD COLUMN unit TEXT;
-- 64 lowercase hex digits found in the cgroup path (docker-<id>.scope,
-- /docker/<id>, cri-containerd-<id>.scope, crio-<id>.scope,
-- libpod-<id>.scope, kubepods .../<id>); NULL when there is none.
ALTER TABLE processes ADD COLUMN container TEXT;

-- parts: the path's components, depth 1 the first; the deepest match wins.
UPDATE processes SET
        unit = (
                WITH RECURSIVE parts(rest, comp, depth) AS (
                        SELECT cgroup || '/', NULL, 0
                        UNION ALL
                        SELECT substr(rest, instr(rest, '/') + 1), substr(rest, 1, instr(rest, '/') - 1), depth + 1
                        FROM parts WHERE rest != '')
                SELECT comp FROM parts
                WHERE comp GLOB '?*.service' OR comp GLOB '?*.scope'
                ORDER BY depth DESC LIMIT 1),
        container = (
                WITH RECURSIVE parts(rest, comp, depth) AS (
                        SELECT cgroup || '/', NULL, 0
                        UNION ALL
                        SELECT substr(rest, instr(rest, '/') + 1), substr(rest, 1, instr(rest, '/') - 1), depth + 1
                        FROM parts WHERE rest != ''),
                stripped(c, depth) AS (
                        SELECT CASE WHEN comp GLOB '*.scope' THEN substr(comp, 1, length(comp) - 6) ELSE comp END,
                               depth
                        FROM parts WHERE comp IS NOT NULL),
                ids(id, depth) AS (
                        SELECT CASE WHEN c GLOB 'docker-*' THEN substr(c, 8)
                                    WHEN c GLOB 'cri-containerd-*' THEN substr(c, 16)
                                    WHEN c GLOB 'crio-*' THEN substr(c, 6)
                                    WHEN c GLOB 'libpod-*' THEN substr(c, 8)
                                    ELSE c END,
                               depth
                        FROM stripped)
                SELECT id FROM ids
                WHERE length(id) = 64 AND id NOT GLOB '*[^0-9a-f]*'
                ORDER BY depth DESC LIMIT 1)
WHERE cgroup IS NOT NULL;

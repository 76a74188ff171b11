/* What a cgroup v2 path says about a process: the systemd unit it runs in and
 * the container it belongs to. Pure string work, so the store can derive both
 * when it records a process and tests can check them without a system. */
#pragma once

#include <stddef.h>

/* Length of a full container id (docker, containerd, CRI-O, podman): 64
 * lowercase hex digits, a SHA-256. */
#define CGROUP_CONTAINER_ID_LEN 64

/* The systemd unit of a cgroup path: its deepest component that ends in
 * ".service" or ".scope" ("nginx.service", "session-3.scope",
 * "docker-<id>.scope"). Slices are not units a process runs in, so they never
 * count. Returns 0 with *ret_unit malloc'd, -ENOENT when the path names no
 * such component, -ENOMEM. */
int cgroup_unit(const char *path, char **ret_unit);

/* The container id in a cgroup path: the deepest component that is 64
 * lowercase hex digits once an optional runtime prefix ("docker-",
 * "cri-containerd-", "crio-", "libpod-") and an optional ".scope" suffix are
 * taken off. That covers docker-<id>.scope, /docker/<id>,
 * cri-containerd-<id>.scope, crio-<id>.scope, libpod-<id>.scope and the
 * kubepods .../pod<uid>/<id> layout. Returns 0 with *ret_id malloc'd,
 * -ENOENT when there is none, -ENOMEM. */
int cgroup_container_id(const char *path, char **ret_id);

/* The mount point of the cgroup v2 hierarchy in a /proc/PID/mountinfo text:
 * the first mount of type "cgroup2" ("/sys/fs/cgroup" on a unified host,
 * "/sys/fs/cgroup/unified" on a hybrid one), with mountinfo's octal
 * escapes (\040 for a space) undone. Returns 0 with *ret malloc'd,
 * -ENOENT when none is mounted (a v1-only host), -ENOMEM. */
int cgroup2_mount_point(const char *mountinfo, char **ret);

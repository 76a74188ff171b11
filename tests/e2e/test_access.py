#!/usr/bin/env python3
"""End to end, access control: with real users and groups created by the
test, the daemon (not profctl) decides what each caller sees. A member of
the socket's group who is not root sees only processes that ran with their
own uid, kernel frames collapsed into [kernel] and no kernel address; root
and members of the admin group see everything; a user outside the socket's
group cannot connect at all."""
import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile

from harness import Profd, binary, require_root, run_tests

SUFFIX = str(os.getpid())
USER = "profdu" + SUFFIX          # in the socket group
ADMIN = "profda" + SUFFIX         # in the socket group and the admin group
OUTSIDER = "profdo" + SUFFIX      # in neither
GROUP = "profdg" + SUFFIX
ADMIN_GROUP = "profdag" + SUFFIX

STATE = {}


def run(cmd):
    subprocess.run(cmd, check=True, capture_output=True)


def setup():
    run(["groupadd", "--system", GROUP])
    run(["groupadd", "--system", ADMIN_GROUP])
    run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G", GROUP, USER])
    run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G",
         f"{GROUP},{ADMIN_GROUP}", ADMIN])
    run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OUTSIDER])
    # the build tree may be in a directory other users can't enter: copy the
    # programs they run into one they can
    d = tempfile.mkdtemp(prefix="profd-access-")
    os.chmod(d, 0o755)
    for name, env in (("profctl", "PROFCTL"), ("cpu_split", "CPU_SPLIT"), ("offcpu_truth", "OFFCPU_TRUTH")):
        dst = os.path.join(d, name)
        shutil.copy(binary(env), dst)
        os.chmod(dst, 0o755)
    STATE["bin"] = d


def teardown():
    for u in (USER, ADMIN, OUTSIDER):
        subprocess.run(["userdel", u], capture_output=True)
    for g in (GROUP, ADMIN_GROUP):
        subprocess.run(["groupdel", g], capture_output=True)
    shutil.rmtree(STATE.get("bin", "/nonexistent"), ignore_errors=True)


def as_user(user, *cmd, **kw):
    """Runs cmd with the user's uid, primary gid and supplementary groups."""
    pw = pwd.getpwnam(user)
    groups = ",".join(str(g.gr_gid) for g in grp.getgrall() if user in g.gr_mem) or "-"
    return subprocess.run(["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
                           f"--groups={groups}" if groups != "-" else "--clear-groups", "--"] + list(cmd),
                          capture_output=True, text=True, timeout=60, **kw)


def profctl_as(user, d, *args):
    return as_user(user, os.path.join(STATE["bin"], "profctl"), "--socket", d.socket, *args)


def query_as(user, d, *args):
    r = profctl_as(user, d, "query", "--json", "--since", "5m", *args)
    assert r.returncode == 0, f"query as {user} failed: {r.stderr}"
    return json.loads(r.stdout)


def test_each_caller_sees_what_is_theirs():
    workdir = tempfile.mkdtemp(prefix="profd-access-conf-")
    os.chmod(workdir, 0o755)  # like /run/profd: the socket's mode and group decide
    conf = os.path.join(workdir, "profd.conf")
    with open(conf, "w") as f:
        f.write(f"socket_group = {GROUP}\nadmin_group = {ADMIN_GROUP}\n")
    with Profd("--interval", "1h", config=conf, workdir=workdir) as d:
        st = os.stat(d.socket)
        assert st.st_uid == 0 and st.st_gid == grp.getgrnam(GROUP).gr_gid, (st.st_uid, st.st_gid)
        assert stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)

        # one workload as the user, one as root; both block (kernel stacks)
        mine = as_user(USER, os.path.join(STATE["bin"], "offcpu_truth"), "2")
        assert mine.returncode == 0, mine.stderr
        user_pid = json.loads(mine.stdout)["pid"]
        roots = subprocess.run([os.path.join(STATE["bin"], "offcpu_truth"), "2"], capture_output=True, text=True,
                               check=True)
        root_pid = json.loads(roots.stdout)["pid"]

        # an unprivileged caller may not force a drain; root may
        r = profctl_as(USER, d, "flush")
        assert r.returncode == 1 and "flush is for root" in r.stderr, (r.returncode, r.stderr)
        d.profctl("flush")

        # root sees both processes, with kernel frames named
        everything = d.query_json("--kind", "offcpu", "--since", "5m")
        for pid in (user_pid, root_pid):
            assert d.query_json("--kind", "offcpu", "--since", "5m", "--pid", str(pid))["total"] > 0, \
                f"root does not see pid {pid}"
        kernel_names = {f["name"] for s in everything["stacks"] for f in s["frames"] if f["kernel"]}
        assert len(kernel_names) > 3, kernel_names

        # the user sees their own process only
        own = query_as(USER, d, "--kind", "offcpu", "--pid", str(user_pid))
        other = query_as(USER, d, "--kind", "offcpu", "--pid", str(root_pid))
        assert own["total"] > 0, "the user does not see their own process"
        assert other["total"] == 0 and other["stacks"] == [], "the user sees root's process"
        all_mine = query_as(USER, d, "--kind", "offcpu")
        assert 0 < all_mine["total"] < everything["total"]
        # kernel frames: at most one [kernel] frame per stack, no function, no address
        text = json.dumps(all_mine)
        assert "0xffff" not in text and "ffffffff" not in text, "a kernel address reached a user"
        for s in all_mine["stacks"]:
            kernel = [f for f in s["frames"] if f["kernel"]]
            assert len(kernel) <= 1 and all(f["name"] == "[kernel]" for f in kernel), s["frames"]
        assert any(f["name"] == "block_nanosleep" for s in all_mine["stacks"] for f in s["frames"])

        # the admin group sees everything, like root
        assert query_as(ADMIN, d, "--kind", "offcpu", "--pid", str(root_pid))["total"] > 0, \
            "the admin group does not see root's process"
        adm_all = query_as(ADMIN, d, "--kind", "offcpu")
        assert any(len([f for f in s["frames"] if f["kernel"]]) > 1 for s in adm_all["stacks"])

        # the heatmap's timeline answer follows the same rules: the user's
        # own samples, all of them, none of root's, kernel frames collapsed
        cpu_split = os.path.join(STATE["bin"], "cpu_split")
        mine = as_user(USER, cpu_split, "1")
        assert mine.returncode == 0, mine.stderr
        user_cpu = json.loads(mine.stdout)["pid"]
        root_cpu = json.loads(subprocess.run([cpu_split, "1"], capture_output=True, text=True, check=True).stdout)["pid"]
        d.profctl("flush")

        def heatmap_as(user, *args):
            r = profctl_as(user, d, "heatmap", "--json", *args)
            assert r.returncode == 0, f"heatmap as {user}: {r.stderr}"
            return json.loads(r.stdout)
        as_root = json.loads(d.profctl("heatmap", "--json", "--pid", str(user_cpu)).stdout)
        own_hm = heatmap_as(USER, "--pid", str(user_cpu))
        other_hm = heatmap_as(USER, "--pid", str(root_cpu))
        print(f"  heatmap: the user sees {own_hm['total']} samples of their process (root sees "
              f"{as_root['total']}), {other_hm['total']} of root's")
        assert own_hm["total"] > 0 and own_hm["total"] == as_root["total"], (own_hm["total"], as_root["total"])
        assert other_hm["total"] == 0, "the user's heatmap shows root's process"
        r = profctl_as(USER, d, "heatmap", "--format", "html")
        assert r.returncode == 0, r.stderr
        stacks = json.loads(r.stdout.split('id="heatmap-data">', 1)[1].split("</script>", 1)[0])["stacks"]
        assert any("spin_alpha" in s for s in stacks), stacks
        for s in stacks:
            kernel = [f for f in s.split(";") if f.endswith("_[k]")]
            assert kernel in ([], ["[kernel]_[k]"]), f"kernel frames reached a user: {s}"

        # a user outside the socket's group cannot even connect
        r = profctl_as(OUTSIDER, d, "status")
        assert r.returncode == 1 and "Permission denied" in r.stderr, (r.returncode, r.stderr)
        print(f"  user sees {all_mine['total'] / 1e6:.0f} ms of {everything['total'] / 1e6:.0f} ms off-CPU "
              f"time, in {len(all_mine['stacks'])} stacks with the kernel collapsed")


if __name__ == "__main__":
    require_root()
    setup()
    try:
        run_tests([test_each_caller_sees_what_is_theirs])
    finally:
        teardown()

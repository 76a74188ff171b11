"""Real ClickHouse servers for the tests: Debian's clickhouse-server (18.16)
on loopback, each with a private configuration and data directory under a
temporary directory, on free ports. A Cluster is two (or more) servers,
each one shard of the cluster CLUSTER_NAME that both configurations name,
so a Distributed table on either spans both. Servers are stopped by their
pid only; kill9() and start() again test crashes and restarts.

Users of every server (users.xml written here):
  default   no password, loopback only: the tests' own queries and the
            servers' queries to each other
  USER      password PASSWORD: what profd is given (may insert)
  READER    password PASSWORD, readonly=1: refuses every insert

The schema comes from schema/clickhouse/ of the source tree (shard.sql on
every server, then cluster.sql with {cluster} replaced), as profctl's init
applies it. Usage:

    with clickhouse.Cluster() as ch:
        ch.create_schema()
        ch.query("SELECT count() FROM profd.samples")
"""
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77
CLUSTER_NAME = "profd_test"
USER = "profd"
READER = "profd_reader"
PASSWORD = "test-secret"
SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schema", "clickhouse")


def server_binary():
    """The clickhouse-server executable, or None."""
    for path in ("/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"):
        if os.access(path, os.X_OK):
            return path
    return shutil.which("clickhouse-server")


def require_server():
    """Skip (exit 77), loudly, when clickhouse-server is not installed."""
    if not server_binary():
        print("SKIP: clickhouse-server is not installed (setup.sh's test packages install it); "
              "this test did NOT run", file=sys.stderr)
        sys.exit(SKIP)


def free_port():
    """A TCP port free on loopback now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Version 1 of the schema, as profd 1 created it: what the upgrade is tested on.
SCHEMA_V1_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clickhouse-v1")


def schema_statements(name, cluster=CLUSTER_NAME, schema_dir=SCHEMA_DIR):
    """The statements of schema/clickhouse/NAME.sql (or of schema_dir's) as
    profd embeds them (schema/clickhouse/embed.py), {cluster} replaced."""
    spec = importlib.util.spec_from_file_location("clickhouse_embed", os.path.join(SCHEMA_DIR, "embed.py"))
    embed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(embed)
    return [s.replace("{cluster}", cluster) for s in embed.statements(os.path.join(schema_dir, name))]


class Error(Exception):
    """A query ClickHouse refused: status is the HTTP status, body its text."""

    def __init__(self, status, body):
        super().__init__(f"ClickHouse answered HTTP {status}: {body.strip()[:500]}")
        self.status = status
        self.body = body


class Server:
    """One clickhouse-server on loopback with its own directory."""

    def __init__(self, root, name, shards_xml):
        self.name = name
        self.dir = os.path.join(root, name)
        self.http_port = free_port()
        self.tcp_port = free_port()
        self.proc = None
        self.shards_xml = shards_xml
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.http_port}/"

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def write_config(self, shards_xml):
        d = self.dir
        # small caches: the defaults (8 and 5 GiB) are for a dedicated machine
        config = f"""<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>{d}/server.log</log>
        <errorlog>{d}/server.err.log</errorlog>
        <size>100M</size>
        <count>1</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>{self.http_port}</http_port>
    <tcp_port>{self.tcp_port}</tcp_port>
    <path>{d}/data/</path>
    <tmp_path>{d}/tmp/</tmp_path>
    <user_files_path>{d}/user_files/</user_files_path>
    <format_schema_path>{d}/format_schemas/</format_schema_path>
    <users_config>{d}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mark_cache_size>67108864</mark_cache_size>
    <mlock_executable>false</mlock_executable>
    <remote_servers>
        <{CLUSTER_NAME}>
{shards_xml}
        </{CLUSTER_NAME}>
    </remote_servers>
</yandex>
"""
        users = f"""<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2000000000</max_memory_usage>
        </default>
        <readonly>
            <readonly>1</readonly>
        </readonly>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
        <{USER}>
            <password>{PASSWORD}</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </{USER}>
        <{READER}>
            <password>{PASSWORD}</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>readonly</profile>
            <quota>default</quota>
        </{READER}>
    </users>
    <quotas>
        <default>
            <interval><duration>3600</duration><queries>0</queries><errors>0</errors>
            <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval>
        </default>
    </quotas>
</yandex>
"""
        with open(os.path.join(d, "config.xml"), "w") as f:
            f.write(config)
        with open(os.path.join(d, "users.xml"), "w") as f:
            f.write(users)

    def start(self, timeout=90):
        """Starts the server (again, after stop or kill9: same ports and
        data) and waits until it answers a query."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.write_config(self.shards_xml)
        self.out = open(os.path.join(self.dir, "stdout.log"), "ab")
        self.proc = subprocess.Popen([server_binary(), f"--config-file={self.dir}/config.xml"],
                                     stdout=self.out, stderr=self.out, stdin=subprocess.DEVNULL,
                                     cwd=self.dir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"clickhouse-server {self.name} exited with {self.proc.returncode} "
                                     f"while starting:\n{self.read_logs()}")
            try:
                if self.query("SELECT 1", timeout=2).strip() == "1":
                    return self
            except (OSError, Error):
                pass
            time.sleep(0.2)
        raise AssertionError(f"clickhouse-server {self.name} did not answer within {timeout}s:\n"
                             + self.read_logs())

    def read_logs(self):
        out = []
        for n in ("stdout.log", "server.err.log"):
            p = os.path.join(self.dir, n)
            if os.path.exists(p):
                with open(p, "rb") as f:
                    out.append(f"--- {n} ---\n" + f.read()[-4000:].decode(errors="replace"))
        return "\n".join(out)

    def kill9(self):
        """SIGKILL by pid: a crash, no shutdown work."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        if self.proc:
            self.out.close()

    def stop(self, timeout=60):
        """SIGTERM by pid, SIGKILL if it does not exit in time."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and not self.out.closed:
            self.out.close()

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def query(self, sql, data=None, user="default", password="", timeout=60, settings=None):
        """Runs one statement over HTTP; returns the body as text. With
        data (bytes), sql is an INSERT whose rows are data; without, the
        statement is the request's body, and a statement longer than
        ClickHouse's max_query_size (256 KiB: a long IN list of stack ids,
        on a loaded host) raises it for itself. Raises Error when
        ClickHouse refuses it."""
        params = dict(settings or {})
        if data is not None:
            params["query"] = sql
        elif len(sql.encode()) >= 256 * 1024:
            params.setdefault("max_query_size", len(sql.encode()) + 1)
        url = self.url + "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, data=data if data is not None else sql.encode(), method="POST")
        req.add_header("X-ClickHouse-User", user)
        req.add_header("X-ClickHouse-Key", password)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise Error(e.code, e.read().decode(errors="replace")) from None


class Cluster:
    """N servers (default 2), each one shard of CLUSTER_NAME."""

    def __init__(self, shards=2, root=None):
        self.root = root or tempfile.mkdtemp(prefix="profd-clickhouse-")
        self.servers = []
        ports = [(free_port(), free_port()) for _ in range(shards)]
        shards_xml = "\n".join(
            f"            <shard><replica><host>127.0.0.1</host><port>{tcp}</port></replica></shard>"
            for _, tcp in ports)
        for i, (http, tcp) in enumerate(ports):
            s = Server(self.root, f"shard{i + 1}", shards_xml)
            s.http_port, s.tcp_port = http, tcp
            self.servers.append(s)

    @property
    def url(self):
        """The first server's URL: where profd and profctl are pointed."""
        return self.servers[0].url

    def start(self):
        for s in self.servers:
            s.start()
        return self

    def stop(self):
        for s in self.servers:
            s.stop()

    def cleanup(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def create_schema(self, cluster=CLUSTER_NAME, schema_dir=SCHEMA_DIR):
        """shard.sql on every server, then cluster.sql on every server (of
        schema_dir: SCHEMA_V1_DIR for version 1; a newer version's
        upgrade.sql is profctl init's)."""
        for name in ("shard.sql", "cluster.sql"):
            for s in self.servers:
                for stmt in schema_statements(name, cluster, schema_dir):
                    s.query(stmt)

    def query(self, sql, **kw):
        """A query on the first server (through the Distributed tables, it
        sees every shard)."""
        return self.servers[0].query(sql, **kw)

    def write_credentials(self, path, user=USER, password=PASSWORD):
        """A credentials file for profd (clickhouse_credentials): "user =
        NAME" and "password = SECRET" lines; mode 0600."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"# ClickHouse user for profd's export\nuser = {user}\npassword = {password}\n")
        return path

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc):
        if exc[0] is not None and not (exc[0] is SystemExit and exc[1].code == 0):
            for s in self.servers:
                print(f"--- clickhouse {s.name} ---\n" + s.read_logs(), file=sys.stderr)
        self.cleanup()

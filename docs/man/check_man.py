#!/usr/bin/env python3
"""The man pages and the example configuration say what the programs do:
every setting profd accepts is documented in profd.conf(5) and shown in the
example file, every long option that `profd --help` and `profctl [COMMAND]
--help` print is documented in its man page, and nothing is documented that
the programs no longer accept. Run by meson test (suite docs) with $PROFD and
$PROFCTL set to the built binaries; arguments: the source root."""
import os
import re
import subprocess
import sys
import tempfile

# An option a --help defines: the first thing on its line ("  -v, --verbose",
# "      --pid N"), not one mentioned in an example or another's text.
OPTION = re.compile(r"^\s+(?:-\w,\s+)?--([a-z][a-z0-9-]*)", re.M)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def conf_keys(src):
    """The keys daemon/conf.c accepts: the .key of every row of its
    conf_settings[] table, and the keys the real profd lists when it rejects
    an unknown one."""
    text = read(os.path.join(src, "daemon", "conf.c"))
    table = re.search(r"conf_settings\[\]\s*=\s*\{(.*?)\n\};", text, re.S)
    if not table:
        sys.exit("daemon/conf.c has no conf_settings[] table")
    keys = set(re.findall(r'\.key\s*=\s*"([a-z0-9_]+)"', table.group(1)))
    if not keys:
        sys.exit("daemon/conf.c: no .key = \"...\" rows in conf_settings[]")
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
        f.write("no_such_key_for_the_docs_check = 1\n")
        f.flush()
        r = subprocess.run([os.environ["PROFD"], "--config", f.name], capture_output=True, text=True,
                           timeout=30)
    known = re.search(r"known: ([a-z0-9_, ]+)\)", r.stderr)
    if not known:
        sys.exit(f"profd did not list the known keys when given an unknown one:\n{r.stderr}")
    keys |= {k.strip() for k in known.group(1).split(",")}
    return keys


def help_options(argv):
    r = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)} --help exited {r.returncode}:\n{r.stderr}")
    return set(OPTION.findall(r.stdout)), r.stdout


def profctl_commands(help_text):
    """Command names from the Commands: section of `profctl --help`."""
    section = re.search(r"^Commands:\n(.*?)(?:\n\n|\Z)", help_text, re.S | re.M)
    if not section:
        sys.exit("profctl --help has no Commands: section")
    return [line.split()[0] for line in section.group(1).splitlines() if line.strip()]


def documented_options(scd):
    """Options the page documents: bold *--name*, in definitions or text."""
    return set(re.findall(r"\*--([a-z][a-z0-9-]*)\*", scd))


def main():
    src = sys.argv[1]
    man = os.path.join(src, "docs", "man")
    problems = []

    keys = conf_keys(src)
    conf_page = read(os.path.join(man, "profd.conf.5.scd"))
    defined = set(re.findall(r"^\*([a-z0-9_]+)\* =", conf_page, re.M))
    for k in sorted(keys - defined):
        problems.append(f"profd.conf.5.scd: setting '{k}' is accepted by profd but not documented "
                        f"(a line '*{k}* = ...' with its type, default and meaning)")
    for k in sorted(defined - keys):
        problems.append(f"profd.conf.5.scd: documents '{k}', which profd does not accept")
    example = read(os.path.join(src, "systemd", "profd.conf.example"))
    shown = set(re.findall(r"^#?([a-z0-9_]+) =", example, re.M))
    for k in sorted(keys - shown):
        problems.append(f"systemd/profd.conf.example: setting '{k}' is missing")
    for k in sorted(shown - keys):
        problems.append(f"systemd/profd.conf.example: shows '{k}', which profd does not accept")

    profd_opts, _ = help_options([os.environ["PROFD"]])
    page = documented_options(read(os.path.join(man, "profd.8.scd")))
    for o in sorted(profd_opts - page):
        problems.append(f"profd.8.scd: option --{o} (in profd --help) is not documented")
    for o in sorted(page - profd_opts):
        problems.append(f"profd.8.scd: documents --{o}, which profd --help does not list")

    profctl = [os.environ["PROFCTL"]]
    opts, top_help = help_options(profctl)
    for cmd in profctl_commands(top_help):
        opts |= help_options(profctl + [cmd])[0]
    page = documented_options(read(os.path.join(man, "profctl.1.scd")))
    for o in sorted(opts - page):
        problems.append(f"profctl.1.scd: option --{o} (in profctl's --help) is not documented")
    for o in sorted(page - opts):
        problems.append(f"profctl.1.scd: documents --{o}, which no profctl --help lists")

    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(keys)} settings, {len(profd_opts)} profd options, {len(opts)} profctl options checked; "
          f"{len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

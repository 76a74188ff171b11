#!/usr/bin/env python3
"""Prints VERSION=DIR for each CPython 3.11+ whose internal headers are
installed here (Debian's python3.X-dev, pyenv's builds), so that
test-python-layout checks the layout tables with offsetof against them."""
import glob
import os

found = {}
candidates = sorted(glob.glob('/usr/include/python3.1[1-9]')) + \
    sorted(glob.glob(os.path.expanduser('~/.pyenv/versions/3.1[1-9].*/include/python3.1[1-9]')))
for path in candidates:
    version = os.path.basename(path)[len('python'):]
    if version not in found and os.path.isfile(os.path.join(path, 'internal', 'pycore_frame.h')):
        found[version] = path
for version, path in sorted(found.items()):
    print(version + '=' + path)

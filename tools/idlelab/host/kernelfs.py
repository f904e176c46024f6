"""The host kernel's pseudo file systems the timeline's host overlay reads (tracefs, debugfs):
found where they are mounted, or mounted for the while on a temporary folder and unmounted
again on the way out. Nothing here is left mounted by us."""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile


class Unavailable(Exception):
    """The file system cannot be reached here; the message says why, in a few words."""


def mounted(fstype, mounts="/proc/mounts"):
    """Where `fstype` is mounted (the first place listed), or None."""
    try:
        with open(mounts, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == fstype and os.path.isdir(parts[1]):
                    return parts[1].replace("\\040", " ")
    except OSError:
        return None
    return None


@contextlib.contextmanager
def reach(fstype):
    """Yields a path where `fstype` is mounted, mounting it on a temporary folder if it is not
    (and unmounting that on exit, however the block ends). Raises Unavailable."""
    where = mounted(fstype)
    if where:
        yield where
        return
    if os.geteuid() != 0:
        raise Unavailable(f"{fstype} is not mounted and mounting it needs root")
    if not shutil.which("mount"):
        raise Unavailable(f"{fstype} is not mounted and there is no mount command")
    folder = tempfile.mkdtemp(prefix=f"idlelab-{fstype}-")
    try:
        res = subprocess.run(["mount", "-t", fstype, "nodev", folder], capture_output=True,
                             text=True, timeout=10)
        if res.returncode != 0:
            raise Unavailable(f"cannot mount {fstype}: {res.stderr.strip() or res.returncode}")
        try:
            yield folder
        finally:
            res = subprocess.run(["umount", folder], capture_output=True, text=True,
                                 timeout=30, check=False)
            if res.returncode != 0:     # say so: a mount of ours is left behind
                print(f"idlelab: could not unmount {fstype} from {folder}: "
                      f"{res.stderr.strip()}", file=sys.stderr)
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(folder)

"""Whether the process a file was named after, or recorded in, still runs: by its pid alone
(pid_alive: a journal, temporary folders, trace instances, `latest`'s temporary link) or by
its pid and start time together (start_ticks: a results folder's owner), which a pid reused
later cannot match."""
import os


def pid_alive(pid):
    """True if a process with this pid exists (ours to signal or not)."""
    if not isinstance(pid, int) or pid <= 0:
        return False  # os.kill(0, ...) would address our own process group
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_ticks(pid):
    """The process's start time (clock ticks after boot), None if there is no such process.
    With the pid it names one process: a pid reused later has another start time."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])

"""The guest's records: `@idlelab <type> key=value ...` lines parsed into (type, fields). Pure.

Values are bare tokens or double-quoted strings (which may hold spaces; \" and \\ escape).
Anything else on the console is for people and is ignored. What the records of one run
make (the boot, the window, the per-CPU counters, the result) is derive/guestrun.py's."""
import re

PREFIX = "@idlelab "
_FIELD = re.compile(r'\s*([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)')


class RecordError(ValueError):
    pass


def is_number(v):
    """A measured number (bools and NA_TCG are not)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_line(line):
    """(type, {key: value}) for an @idlelab line, None for any other line."""
    line = line.rstrip("\r\n")
    at = line.find(PREFIX)
    if at < 0:
        return None
    rest = line[at + len(PREFIX):]
    kind, _, body = rest.partition(" ")
    if not re.fullmatch(r"[a-z_]+", kind):
        raise RecordError(f"bad record type {kind!r} in {line!r}")
    fields = {}
    pos = 0
    body = body.rstrip()
    while pos < len(body):
        m = _FIELD.match(body, pos)
        if not m:
            raise RecordError(f"cannot parse field at {body[pos:]!r} in {line!r}")
        key, value = m.group(1), m.group(2)
        if value.startswith('"'):
            value = re.sub(r'\\(.)', r'\1', value[1:-1])
        fields[key] = value
        pos = m.end()
    return kind, fields


def parse_records(text):
    out = []
    for line in text.splitlines():
        rec = parse_line(line)
        if rec:
            out.append(rec)
    return out


def guest_failure(outcome, output):
    """One line: why a guest that exited `outcome` (its exit code's name) did not succeed,
    with its first error record's message where it printed one."""
    for kind, fields in parse_records(output):
        if kind == "error":
            return f"guest exit {outcome}: {fields.get('msg', fields.get('what', ''))}"
    return f"guest exit {outcome}"

"""Parser for the guest's machine-readable lines: `@idlelab <type> key=value ...`.

Values are bare tokens or double-quoted strings (which may hold spaces; \\" and \\\\ escape).
Anything else on the console is for people and is ignored.
"""
import re

PREFIX = "@idlelab "
_FIELD = re.compile(r'\s*([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)')


class RecordError(ValueError):
    pass


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

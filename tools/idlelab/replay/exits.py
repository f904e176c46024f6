"""tools/replay's exit statuses: read from their one definition, tools/kvmreplay/exits.h."""
import os
import re

from idlelab import TOP

HEADER = os.path.join(TOP, "tools", "kvmreplay", "exits.h")


def load(path=HEADER):
    """{name: code} of the header's RP_EXIT_* lines, with the comment that says when."""
    with open(path) as f:
        text = f.read()
    return {m[0]: (int(m[1]), m[2].strip()) for m in
            re.findall(r"^#define\s+(RP_EXIT_\w+)\s+(\d+)\s*(?:/\*(.*?)\*/)?", text, re.M)}

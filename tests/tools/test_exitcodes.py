"""The host's single exit-code decoder and the @idlelab record parser."""
import pytest

from idlelab.derive import records
from idlelab.host import qemu


def test_every_guest_code_decodes_to_its_name():
    codes = qemu.load_codes()
    assert {"SUCCESS", "BAD_KNOB", "EXCEPTION", "WATCHDOG", "TEST_FAILED"} <= \
        {name for name, _ in codes.values()}
    for code, (name, _) in codes.items():
        assert code != 0, "guest code 0 would collide with QEMU's own status 1"
        assert qemu.decode((code << 1) | 1).name == name


def test_status_zero_is_a_crash_never_success():
    out = qemu.decode(0)
    assert out.name == "CRASH" and not out.ok


@pytest.mark.parametrize("status, name", [(1, "QEMU_ERROR"), (2, "QEMU_ERROR"), (-9, "KILLED"),
                                          ((0x7e << 1) | 1, "UNKNOWN")])
def test_other_statuses(status, name):
    assert qemu.decode(status).name == name


def test_timeout_wins():
    assert qemu.decode(33, timed_out=True).name == "TIMEOUT"


def test_duplicate_codes_are_rejected(tmp_path):
    h = tmp_path / "x.h"
    h.write_text('X(A, 0x10, "a") X(B, 0x10, "b")')
    with pytest.raises(ValueError, match="used twice"):
        qemu.load_codes(str(h))


def test_record_parser():
    kind, f = records.parse_line('noise @idlelab exception cpu=1 name="page fault" a=\\"x b=')
    assert kind == "exception"
    assert f == {"cpu": "1", "name": "page fault", "a": '\\"x', "b": ""}
    assert records.parse_line("idlelab: human text") is None
    kind, f = records.parse_line('@idlelab config haltpoll.guest_halt_poll_ns=200000\r')
    assert f == {"haltpoll.guest_halt_poll_ns": "200000"}
    with pytest.raises(records.RecordError):
        records.parse_line("@idlelab Bad x=1")
    with pytest.raises(records.RecordError):
        records.parse_line("@idlelab ok =1")

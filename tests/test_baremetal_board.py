"""Board descriptions of the bare-metal image (docs/baremetal.md, "On a board"): the TOML file's keys checked by
scripts/baremetal_board.py, the shipped QEMU `virt` boards equal to board.h's defaults, the docs' table equal to
the schema, a bad file stopping `make baremetal BOARD=...` with its sentence, and images built from board files
(GICv3, another load address) booted under QEMU's TCG and held to the latency ground truths."""

from __future__ import annotations

import importlib.util
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from baremetal_console import (REPO, STALL_RUN, Console, build_images, check_one_second_of_1ms_deadlines,
                               check_ready, check_stall, latency_result)

from host_helpers import cli_env, refuses_once, run_cli
from rtvbench.targets.qemu.image import ImageBoard, image_board

BOARDS = REPO / "probe" / "baremetal" / "boards"
GICV3_BOARD = BOARDS / "qemu-virt-gicv3-aarch64.toml"

_spec = importlib.util.spec_from_file_location("baremetal_board", REPO / "scripts" / "baremetal_board.py")
board_tool = sys.modules.setdefault("baremetal_board", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(board_tool)


def _board_h_defaults(arch: str) -> dict[str, str]:
    text = (REPO / "probe" / "baremetal" / arch / "board.h").read_text()
    return dict(re.findall(r"#ifndef (\w+)\n#define \1 (.+)\n#endif", text))


def _defines(header: str) -> dict[str, str]:
    return dict(re.findall(r"#define (\w+) (.+)", header))


@pytest.mark.parametrize("arch", ["aarch64", "riscv64"])
def test_the_shipped_qemu_virt_board_says_what_board_h_defaults_to(arch):
    """`make baremetal` builds from these files: the image they make is the one board.h describes."""
    path = BOARDS / f"qemu-virt-{arch}.toml"
    made = _defines(board_tool.header(board_tool.read_board(path), path))
    defaults = _board_h_defaults(arch)
    if arch == "riscv64":
        del made["BOARD_RAM_SIZE"]     # checked by the board file (the image must fit), read by no riscv64 code
    for macro, value in made.items():
        assert macro in defaults, macro
        expected = defaults[macro]
        assert (value == expected if value.startswith('"') else int(value, 0) == int(expected, 0)), macro


def test_every_shipped_board_file_reads():
    for path in BOARDS.glob("*.toml"):
        assert board_tool.read_board(path)["arch"] in board_tool.ARCHES


def test_the_docs_table_of_keys_is_the_schemas():
    assert board_tool.keys_table() in (REPO / "docs" / "baremetal.md").read_text()


GOOD = {"name": "b", "arch": "aarch64", "load_address": 0x40080000, "ram_base": 0x40000000,
        "ram_size": 0x10000000, "uart": "pl011", "uart_base": 0x09000000, "gic": "v2", "gicd_base": 0x08000000,
        "gicc_base": 0x08010000, "timer_irq": 27}


#: QEMU virt's aarch64 host bridge, as the shipped board files give it
PCI = {"pci_ecam_base": 0x4010000000, "pci_ecam_size": 0x10000000, "pci_mmio_base": 0x10000000,
       "pci_mmio_size": 0x10000000, "pci_pref_base": 0x20000000, "pci_pref_size": 0x10000000}


def _toml(keys: dict) -> str:
    return "".join(f"{k} = {v!r}\n".replace("'", '"') if isinstance(v, str) else f"{k} = {v:#x}\n"
                   for k, v in keys.items())


@pytest.mark.parametrize("change, sentence", [
    ({"uart_speed": 115200}, "unknown key 'uart_speed'; the keys are: name, arch,"),
    ({"timer_irq": None}, "key 'timer_irq' is missing; add it"),
    ({"uart_base": "0x09000000"}, "key 'uart_base' must be an integer (TOML takes 0x... for hex), not '0x09000000'."),
    ({"gic": "v4"}, "key 'gic' is 'v4'; give one of: v2, v3."),
    ({"timer_irq": 40}, "key 'timer_irq' is 40; a PPI's INTID is 16 .. 31"),
    ({"uart": "ns16550"}, "key 'uart' is 'ns16550'; the aarch64 image drives 'pl011' only."),
    ({"gic": "v3"}, "key 'gicr_base' is missing; gic = 'v3' needs it."),
    ({"gicr_base": 0x080a0000}, "key 'gicr_base' does not go with gic = 'v2'; remove it."),
    ({"timer": "sstc"}, "key 'timer' is not a aarch64 board's; remove it."),
    ({"load_address": 0x40080100}, "key 'load_address' is 0x40080100; give a 4 KiB aligned address."),
    ({"load_address": 0x4f000000}, "key 'load_address' is 0x4f000000; the image and its memory area"),
    ({"ram_base": 0, "load_address": 0x80000}, "key 'uart_base' is 0x9000000, in a 1 GiB block that RAM shares"),
    ({"name": "my board"}, "key 'name' is 'my board'; give 1 to 48 letters"),
    ({**PCI, "pci_mmio_size": None}, "key 'pci_mmio_size' is missing; the pci_ keys go together: give all six"),
    ({"pci_ecam_base": 0x4010000000}, "key 'pci_ecam_size' is missing; the pci_ keys go together"),
    ({**PCI, "pci_ecam_base": 0x4010080000}, "key 'pci_ecam_base' or 'pci_ecam_size' is not a multiple of 0x100000"),
    ({**PCI, "pci_pref_base": 0x20100000}, "key 'pci_pref_base' or 'pci_pref_size' is not a multiple of 0x200000"),
    ({**PCI, "pci_pref_base": 0x3ff00000, "pci_pref_size": 0x200000},
     "key 'pci_pref_base' or 'pci_pref_size' is not a multiple of 0x200000"),
    ({**PCI, "pci_pref_base": 0xbfe00000, "pci_pref_size": 0x400000},
     "key 'pci_pref_base' is 0xbfe00000; the window must lie in one 1 GiB block"),
    ({**PCI, "pci_mmio_base": 0xfff00000, "pci_mmio_size": 0x200000},
     "key 'pci_mmio_base' is 0xfff00000; the window ends at 0x100100000, past 0x100000000, the most the image "
     "writes in a 32-bit BAR"),
    ({**PCI, "pci_ecam_base": 0x8000000000}, "key 'pci_ecam_base' is 0x8000000000; the window ends at "
     "0x8010000000, past 0x8000000000, the most the image maps"),
    ({**PCI, "pci_ecam_size": 0x20000000}, "key 'pci_ecam_size' is 0x20000000; an ECAM has 1 MiB a bus"),
    ({**PCI, "pci_pref_base": 0x40000000}, "key 'pci_pref_base' is 0x40000000; its window overlaps RAM"),
    ({**PCI, "pci_mmio_base": 0x20000000}, "key 'pci_pref_base' is 0x20000000; its window overlaps the "
     "'pci_mmio' window"),
    ({**PCI, "pci_ecam_base": 0x50000000}, "key 'pci_ecam_base' is 0x50000000, in a 1 GiB block that RAM shares"),
])
def test_a_bad_board_file_gets_one_sentence_naming_the_file_and_the_key(tmp_path, change, sentence):
    keys = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    path = tmp_path / "b.toml"
    path.write_text(_toml(keys))
    with pytest.raises(board_tool.BoardError) as caught:
        board_tool.read_board(path)
    message = str(caught.value)
    assert message.startswith(f"board file {path}: ") and sentence in message, message
    assert message.count("\n") == 0 and message.endswith(".")


def test_a_board_without_the_pci_keys_is_built_without_pci_and_one_with_them_takes_its_windows(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text(_toml(GOOD))
    assert _defines(board_tool.header(board_tool.read_board(path), path))["BOARD_HAS_PCI"] == "0"
    path.write_text(_toml({**GOOD, **PCI, "pci_pref_base": 0x30000000}))
    made = _defines(board_tool.header(board_tool.read_board(path), path))
    assert "BOARD_HAS_PCI" not in made and made["BOARD_PCI_PREF_BASE"] == "0x30000000"
    assert made["BOARD_PCI_ECAM_BASE"] == "0x4010000000"


def test_a_file_that_is_not_toml_or_not_there_is_named(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text("name = \n")
    assert board_tool.main([str(path), "--arch"]) == 2
    with pytest.raises(board_tool.BoardError, match=r"board file .*b\.toml: is not TOML"):
        board_tool.read_board(path)
    with pytest.raises(board_tool.BoardError, match=r"board file .*none\.toml: cannot be read"):
        board_tool.read_board(tmp_path / "none.toml")


def _make(board: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-C", str(REPO), "baremetal", f"BOARD={board}", f"BOARD_OUT={out}"],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.probe
@pytest.mark.functional
def test_make_stops_on_a_bad_board_file_with_its_sentence(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(_toml({**GOOD, "gic": "v4"}))
    done = _make(path, tmp_path / "out")
    assert done.returncode == 2
    assert f"board file {path}: key 'gic' is 'v4'; give one of: v2, v3." in done.stderr
    assert not (tmp_path / "out").exists()


SMALL_AREA = 32 << 20


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The GICv3 board, a board loaded at 0x48000000 and a board without PCI with a 32 MiB memory area, each
    built into a directory of its own."""
    build_images("qemu-system-aarch64", "aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc")
    root = tmp_path_factory.mktemp("boards")
    moved = root / "moved.toml"
    moved.write_text(_toml({**GOOD, **PCI, "name": "qemu-virt-moved", "load_address": 0x48000000}))
    small = root / "small.toml"
    small.write_text(_toml({**GOOD, "name": "qemu-virt-small", "memory_area_bytes": SMALL_AREA}))
    for board in (GICV3_BOARD, moved, small):
        done = _make(board, root / board.stem)
        assert done.returncode == 0, done.stderr
    return root


def _qemu(image: Path, machine: str) -> Console:
    return Console(["qemu-system-aarch64", "-machine", machine, "-cpu", "cortex-a53", "-m", "256M",
                    "-nographic", "-monitor", "none", "-serial", "stdio", "-kernel", str(image)])


@pytest.fixture(scope="module")
def gicv3_console(built):
    console = _qemu(built / GICV3_BOARD.stem / "rtvb-probe.elf", "virt,gic-version=3")
    console.ready = console.wait_ready()
    yield console
    console.close()


def _results(records: list[dict], **entry) -> dict:
    return latency_result(records, arch="aarch64", board="qemu-virt-gicv3", gic_version=3, caches_on=True, **entry)


@pytest.mark.qemu
@pytest.mark.functional
def test_gicv3_image_counts_every_activation(gicv3_console):
    check_ready(gicv3_console.ready)
    records, errors, status = gicv3_console.run("latency", "--interval-us", "1000", "--duration-s", "1")
    assert (status, errors) == (0, [])
    check_one_second_of_1ms_deadlines(records, _results(records, entered_el=1))


@pytest.mark.qemu
def test_gicv3_image_stalled_activation_is_the_late_one(gicv3_console):
    records, _, status = gicv3_console.run(*STALL_RUN)
    assert status == 0
    check_stall(_results(records, entered_el=1))


@pytest.mark.qemu
@pytest.mark.functional
def test_gicv3_image_entered_at_el2_serves(built):
    """Entered at EL2, start.S opens the ICC_* registers to EL1 (ICC_SRE_EL2) before it drops there."""
    qemu = _qemu(built / GICV3_BOARD.stem / "rtvb-probe.elf", "virt,gic-version=3,virtualization=on")
    try:
        qemu.wait_ready()
        records, errors, status = qemu.run("latency", "--loops", "50")
        assert (status, errors) == (0, [])
        assert _results(records, entered_el=2)["count"] + records[1]["missed"] == 50
        qemu.send("poweroff")
        assert qemu.proc.wait(timeout=30) == 0
    finally:
        qemu.close()


@pytest.mark.qemu
@pytest.mark.functional
def test_a_board_with_another_load_address_is_linked_and_loaded_there(built):
    elf = built / "moved" / "rtvb-probe.elf"
    entry = struct.unpack_from("<Q", elf.read_bytes(), 24)[0]     # e_entry of an ELF64
    assert entry == 0x48000000
    assert "#define BOARD_LOAD_ADDR 0x48000000" in (built / "moved" / "board_config.h").read_text()
    qemu = _qemu(elf, "virt,gic-version=2")
    try:
        check_ready(qemu.wait_ready())
        records, errors, status = qemu.run("latency", "--loops", "50")
        assert (status, errors) == (0, [])
        r = latency_result(records, arch="aarch64", board="qemu-virt-moved", gic_version=2, entered_el=1)
        assert r["count"] + r["missed"] == r["activations"] == 50
    finally:
        qemu.close()


@pytest.mark.qemu
@pytest.mark.functional
def test_a_board_without_pci_ends_ipc_saying_so_even_beside_an_ivshmem_device(built):
    """Built without its ECAM walk, the image does not look for the device QEMU gives it: it says the board has
    none, and serves the next command."""
    qemu = Console(["qemu-system-aarch64", "-machine", "virt,gic-version=2", "-cpu", "cortex-a53", "-m", "128M",
                    "-nographic", "-monitor", "none", "-serial", "stdio",
                    "-object", "memory-backend-ram,id=region,size=1M,share=on",
                    "-device", "ivshmem-plain,memdev=region", "-kernel", str(built / "small" / "rtvb-probe.elf")])
    try:
        check_ready(qemu.wait_ready())
        out, errors, status = qemu.run("ipc", "--connect", "shm", "--sizes", "16")
        assert (status, errors, [r["type"] for r in out]) == (3, [], ["meta", "end"])
        assert out[-1]["status"] == "error" and "the board has no PCI host bridge" in out[-1]["error"]
        records, errors, status = qemu.run("latency", "--loops", "20")
        assert (status, errors) == (0, [])
        r = latency_result(records, arch="aarch64", board="qemu-virt-small", gic_version=2, entered_el=1)
        assert r["count"] + r["missed"] == 20
    finally:
        qemu.close()


def _partition_campaign(image: Path, benchmark: str, environment: str = "") -> str:
    return (f'name = "small"\n[environments.bm]\ntarget = "qemu"\narch = "aarch64"\nimage = "{image}"\n{environment}'
            f'[loads.idle]\n[benchmarks.chase]\nkind = "mem-lat"\n{benchmark}')


@pytest.mark.functional
def test_validate_reads_the_memory_area_and_pci_window_from_the_image_it_is_given(built, tmp_path):
    """The host's idea of an image is the image's own note, read from its file at validate, not the QEMU
    boards' 96 MiB: a 32 MiB area takes a 16M chain, not a 32M one, and an image without PCI takes no region."""
    small = built / "small" / "rtvb-probe.elf"
    assert image_board(small) == ImageBoard(SMALL_AREA, 0)
    for name in ("rtvb-probe.bin", "rtvb-probe.elf"):
        assert image_board(REPO / "build" / "baremetal" / "aarch64" / name) == ImageBoard(96 << 20, 256 << 20)
    assert image_board(built / "moved" / "rtvb-probe.bin") == ImageBoard(96 << 20, 256 << 20)
    (tmp_path / "c.toml").write_text(_partition_campaign(small, 'sizes = ["16M"]\n'))
    assert run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env()).returncode == 0
    (tmp_path / "c.toml").write_text(_partition_campaign(small, 'sizes = ["32M"]\n'))
    refuses_once(tmp_path, 'benchmarks.chase.sizes: cannot be honoured in environment "bm", a bare-metal image: '
                           "size 32M does not fit its 32M memory area")
    (tmp_path / "c.toml").write_text(_partition_campaign(small, 'sizes = ["16M"]\n', 'shm = "r"\n'))
    refuses_once(tmp_path, 'it was built for a board without PCI (its board file gives no pci_ keys), so it finds '
                           "no ivshmem device; build it from a board with the pci_ keys, or drop shm")
    stripped = tmp_path / "old.elf"
    stripped.write_bytes(small.read_bytes().replace(b"rtvb-board-note", b"rtvb-board-xxxx"))
    (tmp_path / "c.toml").write_text(_partition_campaign(stripped, 'sizes = ["16M"]\n'))
    refuses_once(tmp_path, "does not say its memory area and PCI window (it has no board note); rebuild it with "
                           "`make baremetal`")

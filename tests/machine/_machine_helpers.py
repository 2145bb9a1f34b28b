"""What the machine tests share: sizes and writers of fake /proc and /sys trees under
tmp_path. Not a test module (no test_ prefix).
"""

from __future__ import annotations

from pathlib import Path

KIB = 1024
MIB = 1024 * 1024


def write(root: Path, relpath: str, text: str) -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def fake_cache(root: Path, index: int, level: str, kind: str, size: str, shared: str,
               ways: str | None = None) -> None:
    base = f"sys/devices/system/cpu/cpu0/cache/index{index}"
    write(root, f"{base}/level", f"{level}\n")
    write(root, f"{base}/type", f"{kind}\n")
    write(root, f"{base}/size", f"{size}\n")
    write(root, f"{base}/coherency_line_size", "64\n")
    write(root, f"{base}/shared_cpu_list", f"{shared}\n")
    if ways is not None:
        write(root, f"{base}/ways_of_associativity", f"{ways}\n")


CPUINFO_X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: Test CPU 9000
flags\t\t: fpu sse4_2 avx avx2 fma hypervisor constant_tsc

processor\t: 1
model name\t: Test CPU 9000
flags\t\t: fpu sse4_2 avx avx2 fma hypervisor constant_tsc
"""

CPUINFO_ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes crc32
CPU implementer\t: 0x41
"""

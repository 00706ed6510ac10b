"""MCP_CODE_WHEELHOUSE: pure-Python wheels load into the Pyodide sandbox with no network."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from mcp_code_mode.errors import CodeModeError

from ..conftest import require_pyodide
from ..support import TEST_SERVER, ConfigWriter, server_entry, start_gateway


def build_wheel(folder: Path) -> Path:
    wheel = folder / "tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tinypkg/__init__.py", "GREETING = 'hello from a wheel'\n")
        archive.writestr("tinypkg/util.py", "def twice(x):\n    return 2 * x\n")
        archive.writestr(
            "tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n"
        )
        archive.writestr(
            "tinypkg-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr("tinypkg-1.0.dist-info/RECORD", "")
    return wheel


async def test_wheel_from_the_wheelhouse_is_importable(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    require_pyodide()
    build_wheel(tmp_path)
    gw = await start_gateway(
        write_config({"t": server_entry(TEST_SERVER)}),
        executor="pyodide",
        pool_size=1,
        wheelhouse=str(tmp_path),
        extra_imports="tinypkg",
    )
    try:
        out = (
            await gw.execute(
                "import tinypkg\nimport tinypkg.util\n[tinypkg.GREETING, tinypkg.util.twice(21)]"
            )
        ).to_json()
        assert out["ok"], out
        assert out["result"] == ["hello from a wheel", 42]
    finally:
        await gw.aclose()


async def test_wheelhouse_rejects_platform_wheels(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    require_pyodide()
    (tmp_path / "native-1.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"not really")
    with pytest.raises(CodeModeError, match="only pure-Python wheels"):
        await start_gateway(
            write_config({"t": server_entry(TEST_SERVER)}),
            executor="pyodide",
            pool_size=1,
            wheelhouse=str(tmp_path),
        )

"""Run pi-usage.ipynb headless against an export and check that every figure was drawn.

usage: run_notebook.py EXPORT_DIR [--timeout SECONDS] [--figures DIR] [--write NOTEBOOK]

Executes the notebook with nbclient (the kernel starts in notebooks/, PISA_EXPORT=EXPORT_DIR),
fails on any cell error, on anything a cell writes to stderr (warnings included), and unless every
cell tagged `figure` left exactly one non-empty PNG. Prints one line per figure, then "notebook: ok".
--figures writes each figure as DIR/<name>.png; --write saves the executed notebook.
Exit codes: 0 ok, 1 a check failed, 3 a Python package is missing.
"""

import argparse
import base64
import os
import signal
import struct
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE / "pi-usage.ipynb"
# The figures the notebook promises, in order (a cell's metadata `name`).
FIGURES = ["daily-cost", "projects", "cache-hit-ratio", "session-cost", "compactions", "side-costs", "forks"]
PNG = b"\x89PNG\r\n\x1a\n"

try:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
except ImportError as e:
    print(f"{e}: pip install -r notebooks/requirements.txt", file=sys.stderr)
    sys.exit(3)


def fail(message):
    print(f"notebook: {message}")
    sys.exit(1)


def png_size(data):
    """(width, height) from a PNG's IHDR chunk."""
    if not data.startswith(PNG) or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("export", type=Path)
    p.add_argument("--timeout", type=int, default=300, help="for the whole run (default 300 s)")
    p.add_argument("--figures", type=Path, help="write each figure as DIR/<name>.png")
    p.add_argument("--write", type=Path, help="save the executed notebook here")
    a = p.parse_args()

    signal.signal(signal.SIGALRM, lambda *_: fail(f"did not finish within {a.timeout} s"))
    signal.alarm(a.timeout)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel starts in notebooks/: a folder there is named relative to it, as a user would.
    export = a.export.resolve()
    os.environ["PISA_EXPORT"] = str(export.relative_to(HERE) if export.is_relative_to(HERE) else export)
    client = NotebookClient(nb, timeout=a.timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}})
    start = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as e:
        fail(f"a cell failed:\n{e}")
    signal.alarm(0)
    seconds = time.monotonic() - start

    drawn = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                fail(f"a cell wrote to stderr:\n{cell.source[:200]}\n---\n{out.get('text')}")
        if "figure" not in cell.metadata.get("tags", []):
            continue
        name = cell.metadata.get("name", "?")
        pngs = [base64.b64decode(o["data"]["image/png"]) for o in cell.outputs if "image/png" in o.get("data", {})]
        if len(pngs) != 1:
            fail(f"figure {name} left {len(pngs)} PNG outputs, not one")
        size = png_size(pngs[0])
        if size is None or min(size) < 100 or len(pngs[0]) < 2000:
            fail(f"figure {name} is not a real picture ({len(pngs[0])} bytes, size {size})")
        print(f"figure {name}: {size[0]}x{size[1]} px, {len(pngs[0]):,} bytes")
        drawn.append(name)
        if a.figures:
            a.figures.mkdir(parents=True, exist_ok=True)
            (a.figures / f"{name}.png").write_bytes(pngs[0])
    if drawn != FIGURES:
        fail(f"figures drawn {drawn}, expected {FIGURES}")
    if a.write:
        for cell in nb.cells:
            cell.metadata.pop("execution", None)  # timings: noise in a diff
        nbformat.write(nb, a.write)
    print(f"notebook: ok ({len(drawn)} figures, {seconds:.1f} s)")


main()

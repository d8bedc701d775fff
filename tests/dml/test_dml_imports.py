"""DELETE with deletion vectors and OPTIMIZE do not import pandas (about 0.15-0.4 s).

pyarrow imports pandas the first time it converts a Python value (``pa.scalar``, ``pa.array``
of a list, a Python number given to a compute function); these operations build their Arrow
constants without conversions (``deltalog.arrow.values``), so a short delete or compaction is
not charged for it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dmlutil import make_table

CHILD = """
import sys
import deltalog
table = deltalog.DeltaTable(sys.argv[1])
assert table.delete("id = 3 OR v > 37.5")["numDeletedRows"] == 3
assert "pandas" not in sys.modules, "pandas was imported by a delete with deletion vectors"
result = table.optimize.compact()
assert result.files_removed == 4, result
assert "pandas" not in sys.modules, "pandas was imported by optimize"
"""


def test_delete_and_optimize_do_not_import_pandas(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True, files=4)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, table.uri], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr

"""``python -m tests.driver.nvmlstub OUT``: build the stub into OUT, as the test run does, and print its path."""

import sys
from pathlib import Path

from tests.driver.nvmlstub import build

print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "build")))
